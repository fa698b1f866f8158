"""``PassAtKEval``: pass@k evaluation (:mod:`.passk`) with the record of what decided its scores.

``openenv-train eval --k`` runs through it, so every eval leaves a record: the scores per env
with what decides them (tasks, k, seeds, success threshold, every rollout setting, the library
versions), one plain JSON document written beside the trajectories. The document has OpenEnv's
``EvalResult`` shape (``{"config": {...}, "scores": {...}}``), so
``openenv_train.openenv.evals.EvalResult`` reads it; OpenEnv's ``EvalHarness`` over this class is
``openenv_train.openenv.evals.PassAtKHarness``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .. import __version__
from ..catalog import installed_versions
from ..rollout.episode import RolloutConfig
from .passk import EvalTarget, evaluate_passk

#: the libraries whose versions the record of an eval keeps
LIBRARIES = ("openenv-train", "torch", "transformers")


class PassAtKParameters(BaseModel):
    """The parameters of a pass@k eval (the record's ``eval_parameters``, as JSON)."""

    model_config = ConfigDict(extra="forbid")

    tasks: int = Field(ge=1, description="seeded tasks per env: task t is the game of seed + t")
    k: int = Field(ge=1, description="sampled episodes per task")
    seed: int = Field(0, description="the seed of task 0")
    threshold: float = Field(0.0, description="a sample passes when its reward is above this")
    model: str | None = Field(None, description="what was evaluated: recorded, not loaded")
    rollout: RolloutConfig = Field(
        default_factory=RolloutConfig,
        description="RolloutConfig fields: temperature, turn and token limits, episode_seed...",
    )

    @field_validator("rollout", mode="before")
    @classmethod
    def _known_rollout_fields(cls, value: Any) -> Any:
        if isinstance(value, dict):
            unknown = sorted(set(value) - {f.name for f in fields(RolloutConfig)})
            if unknown:
                raise ValueError(f"unknown RolloutConfig field(s) {unknown}")
        return value


class PassAtKEval:
    """pass@k and mean@k of ``policy`` on ``targets`` (servers started for the eval where a
    target has no ``urls``). A ``dataset`` names the envs, comma-separated; the scores are
    ``{env: {"pass@1": ..., "mean@k": ..., "tasks": ..., "k": ..., "episodes": ...}}`` and
    :attr:`trajectories` holds the last run's episodes (one JSON-ready dict each)."""

    def __init__(self, policy: Any, targets: Sequence[EvalTarget]) -> None:
        if not targets:
            raise ValueError("targets: give at least one EvalTarget to evaluate on")
        self.policy, self.targets = policy, list(targets)
        self.trajectories: list[dict[str, Any]] = []

    @property
    def name(self) -> str:
        """The record's ``harness_name``: the class name."""
        return type(self).__name__

    def config(
        self,
        *,
        tasks: int,
        k: int,
        seed: int = 0,
        threshold: float = 0.0,
        rollout: RolloutConfig | None = None,
        envs: Sequence[str] | None = None,
        model: str | None = None,
    ) -> dict[str, Any]:
        """What decides an eval's scores, as plain JSON: ``harness_name``, ``harness_version``,
        ``library_versions`` (of :data:`LIBRARIES`), ``dataset`` (``envs``, default every target)
        and ``eval_parameters`` (:class:`PassAtKParameters`)."""
        params = PassAtKParameters(
            tasks=tasks,
            k=k,
            seed=seed,
            threshold=threshold,
            model=model,
            rollout=rollout or RolloutConfig(),
        )
        names = list(envs) if envs else [t.name for t in self.targets]
        self.select(",".join(names))  # an unknown env fails here, not after the eval
        return {
            "harness_name": self.name,
            "harness_version": __version__,
            "library_versions": installed_versions(*LIBRARIES),
            "dataset": ",".join(names),
            "eval_parameters": params.model_dump(mode="json"),
        }

    def select(self, dataset: str) -> list[EvalTarget]:
        """The targets ``dataset`` names (comma-separated env names), in its order."""
        by_name = {t.name: t for t in self.targets}
        names = [n.strip() for n in dataset.split(",") if n.strip()]
        unknown = [n for n in names if n not in by_name]
        if not names or unknown:
            raise ValueError(
                f"dataset: {dataset!r} must name this eval's envs, comma-separated: "
                f"{', '.join(by_name)}"
            )
        return [by_name[n] for n in names]

    def run(self, dataset: str, eval_parameters: Mapping[str, Any]) -> dict[str, Any]:
        """Sample and score; bad parameters raise a ``ValueError`` naming the field before any
        episode."""
        params = PassAtKParameters.model_validate(dict(eval_parameters))
        targets = self.select(dataset)
        report, self.trajectories = evaluate_passk(
            self.policy,
            targets,
            tasks=params.tasks,
            k=params.k,
            seed=params.seed,
            config=params.rollout,
            threshold=params.threshold,
        )
        return dict(report)

    def run_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The record of one eval: ``{"config": config, "scores": {env: scores}}``."""
        scores = self.run(config["dataset"], config["eval_parameters"])
        return {"config": dict(config), "scores": scores}
