"""OpenEnv's ``openenv.core.evals``: ``EvalHarness``, ``EvalConfig``, ``EvalResult``,
``InspectAIHarness``, and ``PassAtKHarness`` (OpenEnv's harness shape over the native pass@k).

An :class:`EvalHarness` turns ``(harness version, library versions, dataset, parameters)`` into
scores; :class:`EvalConfig` records those inputs so a result can be reproduced and compared, and
:class:`EvalResult` keeps the scores with the config that produced them. They are plain pydantic
models (OpenEnv 0.10's fields), so a result is one JSON document: ``result.model_dump_json()``
writes it and ``EvalResult.model_validate_json(text)`` reads it back equal (the record
``openenv-train eval --k`` writes too). Unknown fields are refused and assignments are
validated, so a typo cannot slip a parameter past the record.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # the training stack (torch) loads only when a PassAtKHarness is made
    from ..rollout.episode import RolloutConfig
    from ..training.passk import EvalTarget

__all__ = [
    "EvalConfig",
    "EvalHarness",
    "EvalResult",
    "InspectAIHarness",
    "PassAtKHarness",
    "scores_from_log",
]


class EvalConfig(BaseModel):
    """Everything that decides an evaluation's scores: compare two configs to know whether two
    results are comparable."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    harness_name: str = Field(description="the harness that ran the eval (EvalHarness.name)")
    harness_version: str = Field(description="the version of that harness")
    library_versions: dict[str, str] = Field(
        description="distribution name -> version of the libraries the eval used, "
        "e.g. installed_versions('torch', 'transformers')"
    )
    dataset: str = Field(description="what was evaluated on: a dataset, task or env name(s)")
    eval_parameters: dict[str, Any] = Field(
        description="the harness's parameters (sampling, seeds, limits...); see the harness"
    )


class EvalResult(BaseModel):
    """The scores of one evaluation with the config that produced them."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    config: EvalConfig = Field(description="the config the eval ran with")
    scores: dict[str, Any] = Field(description="metric name -> value (numbers or nested dicts)")


class EvalHarness(ABC):
    """Subclasses implement :meth:`run`; :meth:`run_from_config` runs an :class:`EvalConfig`
    and keeps the scores with it, so the result records how it was made."""

    @abstractmethod
    def run(
        self,
        harness_version: str,
        library_versions: dict[str, str],
        dataset: str,
        eval_parameters: dict[str, Any],
    ) -> dict[str, Any]:
        """Evaluate on ``dataset`` with ``eval_parameters``; return ``{metric: value}``."""

    def run_from_config(self, config: EvalConfig) -> EvalResult:
        """:meth:`run` with the config's fields; the result holds this very config object."""
        scores = self.run(
            harness_version=config.harness_version,
            library_versions=config.library_versions,
            dataset=config.dataset,
            eval_parameters=config.eval_parameters,
        )
        return EvalResult(config=config, scores=scores)

    @property
    def name(self) -> str:
        """The harness's name in an :class:`EvalConfig`: its class name."""
        return type(self).__name__


#: eval_parameters keys passed to ``inspect_ai.eval`` only when set (not None)
OPTIONAL_KEYS = ("max_samples", "temperature", "max_tokens", "epochs", "solver", "scorer")
#: eval_parameters keys passed only when non-empty
MAPPING_KEYS = ("task_args", "model_args")
ACCEPTED_KEYS = ("model", "task", *MAPPING_KEYS, *OPTIONAL_KEYS)


class InspectAIHarness(EvalHarness):
    """Runs one Inspect AI task on one model and returns its metrics. Inspect AI is optional: it
    is imported only when :meth:`run` is called, and its absence is an ``ImportError`` that says
    how to install it. ``log_dir``: where Inspect AI writes its logs (None: its own default).

    ``eval_parameters`` keys:

    ==============  ==========================================================================
    ``model``       required: the model Inspect AI evaluates (``"openai/gpt-4o"``, ``"hf/..."``)
    ``task``        the task (file path or registry name); default: the ``dataset`` argument
    ``task_args``   dict of task arguments
    ``model_args``  dict of provider-specific model arguments
    ``max_samples`` ``temperature`` ``max_tokens`` ``epochs``: passed on when set
    ``solver``      ``scorer``: override the task's solver / scorer pipeline
    ==============  ==========================================================================
    """

    def __init__(self, *, log_dir: str | None = None) -> None:
        self.log_dir = log_dir

    def run(
        self,
        harness_version: str,
        library_versions: dict[str, str],
        dataset: str,
        eval_parameters: dict[str, Any],
    ) -> dict[str, Any]:
        """Run ``inspect_ai.eval(task, model=..., ...)``; return the first log's metrics
        (see :func:`scores_from_log`). ``harness_version`` and ``library_versions`` are
        recorded by the caller's :class:`EvalConfig`, not checked.

        Raises ``ValueError`` for missing or unknown parameters, ``ImportError`` when Inspect
        AI is not installed, ``RuntimeError`` when the evaluation produced no successful log.
        """
        model = eval_parameters.get("model")
        if not model:
            raise ValueError(
                "eval_parameters['model'] is required: the model Inspect AI evaluates "
                "(e.g. 'openai/gpt-4o' or 'hf/Qwen/Qwen2.5-0.5B-Instruct')"
            )
        unknown = sorted(set(eval_parameters) - set(ACCEPTED_KEYS))
        if unknown:
            raise ValueError(
                f"eval_parameters: unknown key(s) {unknown} for InspectAIHarness; "
                f"accepted: {', '.join(ACCEPTED_KEYS)}"
            )
        try:
            from inspect_ai import eval as inspect_eval
        except ImportError as err:
            raise ImportError(
                "inspect-ai is required for InspectAIHarness: pip install inspect-ai"
            ) from err

        kwargs: dict[str, Any] = {}
        for key in MAPPING_KEYS:
            if eval_parameters.get(key):
                kwargs[key] = eval_parameters[key]
        for key in OPTIONAL_KEYS:
            if eval_parameters.get(key) is not None:
                kwargs[key] = eval_parameters[key]
        if self.log_dir is not None:
            kwargs["log_dir"] = self.log_dir
        task = eval_parameters.get("task", dataset)
        logs = inspect_eval(task, model=model, **kwargs)
        if not logs:
            raise RuntimeError(
                f"Inspect AI evaluation returned no logs for task {task!r}: check the task "
                "name and the model string"
            )
        log = logs[0]
        if log.status != "success":
            raise RuntimeError(
                f"Inspect AI evaluation of {task!r} failed with status: {log.status} "
                f"(its log is in {self.log_dir or 'the Inspect AI log folder'})"
            )
        return scores_from_log(log)


def scores_from_log(log: Any) -> dict[str, Any]:
    """``{metric name: value}`` of an Inspect AI ``EvalLog``: every scorer's metrics in one
    flat dict (a later scorer's metric wins a name clash); empty when the log has no results."""
    results = getattr(log, "results", None)
    if results is None:
        return {}
    return {
        name: metric.value for score in results.scores for name, metric in score.metrics.items()
    }


class PassAtKHarness(EvalHarness):
    """pass@k and mean@k of ``policy`` on ``targets`` as an OpenEnv :class:`EvalHarness`: the
    native ``openenv_train.training.PassAtKEval`` (see it for the scores and the targets), its
    config an :class:`EvalConfig` and its result an :class:`EvalResult`."""

    def __init__(self, policy: Any, targets: Sequence[EvalTarget]) -> None:
        from ..training.passk_eval import PassAtKEval

        self.passk = PassAtKEval(policy, targets)

    @property
    def policy(self) -> Any:
        return self.passk.policy

    @property
    def targets(self) -> list[EvalTarget]:
        return self.passk.targets

    @property
    def trajectories(self) -> list[dict[str, Any]]:
        """The last run's episodes, one JSON-ready dict each."""
        return self.passk.trajectories

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
        harness's name, openenv-train's version and the installed library versions."""
        fields = self.passk.config(
            tasks=tasks,
            k=k,
            seed=seed,
            threshold=threshold,
            rollout=rollout,
            envs=envs,
            model=model,
        )
        return EvalConfig(**{**fields, "harness_name": self.name})

    def select(self, dataset: str) -> list[EvalTarget]:
        """The targets ``dataset`` names (comma-separated env names), in its order."""
        return self.passk.select(dataset)

    def run(
        self,
        harness_version: str,
        library_versions: dict[str, str],
        dataset: str,
        eval_parameters: dict[str, Any],
    ) -> dict[str, Any]:
        """Sample and score (``harness_version`` and ``library_versions`` are the record's,
        not checked). Bad parameters raise a ``ValueError`` naming the field."""
        return self.passk.run(dataset, eval_parameters)
