"""Rubrics for delayed rewards: score the whole episode when it ends, then assign credit.

``TrajectoryRubric`` records every ``(action, observation)`` and returns ``intermediate_reward``
until an observation has ``done``; then it returns ``score_trajectory``. Subclasses choose how
the final score is spread over the steps (``compute_step_rewards``). The env's ``reset`` clears
the record (``Environment._reset_rubric``).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from .rubric import Rubric

Trajectory = list[tuple[Any, Any]]


class TrajectoryRubric(Rubric):
    """Accumulates the episode; scores it on the step whose observation is ``done``."""

    def __init__(self, intermediate_reward: float = 0.0) -> None:
        super().__init__()
        self.intermediate_reward = intermediate_reward
        self._trajectory: Trajectory = []

    def forward(self, action: Any, observation: Any) -> float:
        self._trajectory.append((action, observation))
        if getattr(observation, "done", False):
            return self.score_trajectory(self._trajectory)
        return self.intermediate_reward

    @abstractmethod
    def score_trajectory(self, trajectory: Trajectory) -> float:
        """The episode's score, from its ``(action, observation)`` pairs."""

    @abstractmethod
    def compute_step_rewards(self) -> list[float]:
        """One reward per recorded step: the credit-assignment rule."""

    def reset(self) -> None:
        self._trajectory = []
        super().reset()

    @property
    def trajectory(self) -> Trajectory:
        """A copy of the steps recorded so far."""
        return list(self._trajectory)

    def state_dict(self) -> dict[str, Any]:
        return {"intermediate_reward": self.intermediate_reward}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "intermediate_reward" in state:
            self.intermediate_reward = state["intermediate_reward"]


class ExponentialDiscountingTrajectoryRubric(TrajectoryRubric):
    """Credit ``gamma ** (T - 1 - t) * final`` to step ``t`` of a ``T``-step episode."""

    def __init__(self, gamma: float = 0.99, intermediate_reward: float = 0.0) -> None:
        super().__init__(intermediate_reward=intermediate_reward)
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        self.gamma = gamma

    def compute_step_rewards(self) -> list[float]:
        if not self._trajectory:
            return []
        final = self.score_trajectory(self._trajectory)
        last = len(self._trajectory) - 1
        return [final * self.gamma ** (last - t) for t in range(last + 1)]

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "gamma": self.gamma}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        if "gamma" in state:
            self.gamma = state["gamma"]
