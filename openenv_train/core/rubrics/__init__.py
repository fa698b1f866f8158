"""Rubrics: rewards as composable objects, with OpenEnv 0.10's names and semantics (RFC 004).

One rubric serves both sides: an env computes ``observation.reward`` with it in ``step``
(``Environment(rubric=...)``), and ``openenv_train.training.make_rubric_reward`` turns the same
object into a TRL reward function. ``LLMJudge`` (a rubric that asks a language model, network
I/O) lives above the core, in ``openenv_train.judge``.
"""

from .containers import Gate, RubricDict, RubricList, Sequential, WeightedSum
from .rubric import Rubric
from .trajectory import ExponentialDiscountingTrajectoryRubric, TrajectoryRubric

__all__ = [
    "ExponentialDiscountingTrajectoryRubric",
    "Gate",
    "Rubric",
    "RubricDict",
    "RubricList",
    "Sequential",
    "TrajectoryRubric",
    "WeightedSum",
]
