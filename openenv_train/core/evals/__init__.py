"""Evaluation harnesses with OpenEnv 0.10's names (``openenv.core.evals``).

An :class:`EvalHarness` turns ``(harness version, library versions, dataset, parameters)`` into
scores; :class:`EvalConfig` records those inputs so a result can be reproduced and compared, and
:class:`EvalResult` keeps the scores with the config that produced them. Two harnesses ship:
:class:`InspectAIHarness` (Inspect AI's ``eval()``, an optional dependency) and, in the training
package, ``openenv_train.training.PassAtKHarness`` (pass@k of a policy on env servers, what
``openenv-train eval --k`` runs).
"""

from .harness import EvalHarness
from .inspect_harness import InspectAIHarness, scores_from_log
from .results import EvalConfig, EvalResult, installed_versions

__all__ = [
    "EvalConfig",
    "EvalHarness",
    "EvalResult",
    "InspectAIHarness",
    "installed_versions",
    "scores_from_log",
]
