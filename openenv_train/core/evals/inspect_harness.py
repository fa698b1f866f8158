"""``InspectAIHarness``: an :class:`EvalHarness` that runs Inspect AI's ``eval()``.

Inspect AI is optional: it is imported only when :meth:`InspectAIHarness.run` is called, and its
absence is an ``ImportError`` that says how to install it. ``eval_parameters`` keys:

==============  ==========================================================================
``model``       required: the model Inspect AI evaluates (``"openai/gpt-4o"``, ``"hf/..."``)
``task``        the task (file path or registry name); default: the ``dataset`` argument
``task_args``   dict of task arguments
``model_args``  dict of provider-specific model arguments
``max_samples`` ``temperature`` ``max_tokens`` ``epochs``: passed on when set
``solver``      ``scorer``: override the task's solver / scorer pipeline
==============  ==========================================================================
"""

from __future__ import annotations

from typing import Any

from .harness import EvalHarness

#: eval_parameters keys passed to ``inspect_ai.eval`` only when set (not None)
OPTIONAL_KEYS = ("max_samples", "temperature", "max_tokens", "epochs", "solver", "scorer")
#: eval_parameters keys passed only when non-empty
MAPPING_KEYS = ("task_args", "model_args")
ACCEPTED_KEYS = ("model", "task", *MAPPING_KEYS, *OPTIONAL_KEYS)


class InspectAIHarness(EvalHarness):
    """Runs one Inspect AI task on one model and returns its metrics.

    ``log_dir``: where Inspect AI writes its logs (None: its own default).
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
