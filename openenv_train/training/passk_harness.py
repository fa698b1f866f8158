"""``PassAtKHarness``: pass@k evaluation (:mod:`.passk`) as an OpenEnv :class:`EvalHarness`.

``openenv-train eval --k`` runs through it, so every eval leaves an :class:`EvalResult`: the
scores per env with an :class:`EvalConfig` holding what decides them (tasks, k, seeds, success
threshold, every rollout setting, the library versions), written beside the trajectories.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .. import __version__
from ..core.evals import EvalConfig, EvalHarness, installed_versions
from ..rollout.episode import RolloutConfig
from .passk import EvalTarget, evaluate_passk

#: the libraries whose versions an EvalConfig of this harness records
LIBRARIES = ("openenv-train", "torch", "transformers")


class PassAtKParameters(BaseModel):
    """The ``eval_parameters`` of :class:`PassAtKHarness` (kept in an EvalConfig as JSON)."""

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


class PassAtKHarness(EvalHarness):
    """pass@k and mean@k of ``policy`` on ``targets`` (servers started for the eval where a
    target has no ``urls``). ``dataset`` names the envs, comma-separated; the scores are
    ``{env: {"pass@1": ..., "mean@k": ..., "tasks": ..., "k": ..., "episodes": ...}}`` and
    :attr:`trajectories` holds the last run's episodes (one JSON-ready dict each)."""

    def __init__(self, policy: Any, targets: Sequence[EvalTarget]) -> None:
        if not targets:
            raise ValueError("targets: give at least one EvalTarget to evaluate on")
        self.policy, self.targets = policy, list(targets)
        self.trajectories: list[dict[str, Any]] = []

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
    ) -> EvalConfig:
        """The :class:`EvalConfig` of an eval on ``envs`` (default: every target), with this
        harness's name and version and the installed versions of :data:`LIBRARIES`."""
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
        return EvalConfig(
            harness_name=self.name,
            harness_version=__version__,
            library_versions=installed_versions(*LIBRARIES),
            dataset=",".join(names),
            eval_parameters=params.model_dump(mode="json"),
        )

    def select(self, dataset: str) -> list[EvalTarget]:
        """The targets ``dataset`` names (comma-separated env names), in its order."""
        by_name = {t.name: t for t in self.targets}
        names = [n.strip() for n in dataset.split(",") if n.strip()]
        unknown = [n for n in names if n not in by_name]
        if not names or unknown:
            raise ValueError(
                f"dataset: {dataset!r} must name this harness's envs, comma-separated: "
                f"{', '.join(by_name)}"
            )
        return [by_name[n] for n in names]

    def run(
        self,
        harness_version: str,
        library_versions: dict[str, str],
        dataset: str,
        eval_parameters: dict[str, Any],
    ) -> dict[str, Any]:
        """Sample and score (``harness_version`` and ``library_versions`` are the record's,
        not checked). Bad parameters raise a ``ValueError`` naming the field."""
        params = PassAtKParameters.model_validate(eval_parameters)
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
