"""The verdict as a rubric: one child per metric of the reward file, so a ``reward.json`` with
several metrics shows each one (``env.rubric.named_rubrics()``, each child's ``last_score``)."""

from __future__ import annotations

from typing import Any

from openenv_train.core.rubrics import Rubric
from openenv_train.core.rubrics.containers import RubricDict

from .verifier import headline


class MetricRubric(Rubric):
    """One metric of the verifier's reward file (read from the observation's metadata)."""

    def __init__(self, metric: str) -> None:
        super().__init__()
        self.metric = metric

    def forward(self, action: Any, observation: Any) -> float:
        return float(observation.metadata["rewards"][self.metric])


class VerifierRubric(Rubric):
    """The headline reward (``reward``, else the mean of the metrics) over one child per metric."""

    def __init__(self, metrics: list[str]) -> None:
        super().__init__()
        self.metrics = RubricDict({m: MetricRubric(m) for m in metrics})

    def forward(self, action: Any, observation: Any) -> float:
        scores = {name: r(action, observation) for name, r in self.metrics.items()}
        return headline(scores)  # type: ignore[arg-type]
