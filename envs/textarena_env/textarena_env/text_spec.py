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
