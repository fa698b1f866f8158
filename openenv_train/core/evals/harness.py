"""``EvalHarness``: the one interface every evaluation harness implements (OpenEnv 0.10's ABC)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from .results import EvalConfig, EvalResult


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
