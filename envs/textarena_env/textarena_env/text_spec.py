"""``TextArenaSpec``: a textarena game as text for the rollout engine and the ``grpo_text``
recipe (``env.spec: textarena_env.text_spec:TextArenaSpec``, ``env.spec_kwargs: {seed: 0}``).

The game's prompt starts the episode, each model answer is one move (sent as the game reads it,
e.g. ``[5]``), and what the game answers is appended as the next user turn.
"""

from __future__ import annotations

from typing import Any

from openenv_train.rollout import SeededTextSpec

from .models import MoveAction


class TextArenaSpec(SeededTextSpec):
    """Multi-turn play of one game; the game's reward at the end."""

    invalid_action_reward = -1.0
    truncation_reward = -1.0

    @property
    def client_cls(self) -> Any:  # type: ignore[override]
        from .client import TextArenaEnv

        return TextArenaEnv

    def initial_prompt(self, result: Any, prompt: Any) -> str:
        return result.observation.text

    def render(self, result: Any) -> str:
        return "\n" + result.observation.text

    def parse_action(self, text: str) -> MoveAction | None:
        move = text.replace("<eos>", " ").strip()
        return MoveAction(message=move) if move else None


class TextArenaSeatSpec(TextArenaSpec):
    """A two-player game (``textarena/KuhnPoker-v0``): with ``seat`` set, the spec holds that seat
    against the server's built-in ``opponent`` (an ordinary multi-turn episode); with
    ``seat=None`` the session holds both seats and each answer is the move of the seat to move."""

    def __init__(
        self,
        seed: int | None = None,
        same_task_per_group: bool = True,
        seat: int | None = 0,
        opponent: str = "random",
    ) -> None:
        super().__init__(seed=seed, same_task_per_group=same_task_per_group)
        self.seat = seat
        self.opponent = opponent

    @property
    def client_cls(self) -> Any:  # type: ignore[override]
        from .client import TextArenaSeatsEnv

        return TextArenaSeatsEnv

    def reset_kwargs(self, prompt: Any, group: int, row: int) -> dict[str, Any]:
        kw = super().reset_kwargs(prompt, group, row)
        if self.seat is not None:
            kw.update(seat=self.seat, opponent=self.opponent)
        return kw
