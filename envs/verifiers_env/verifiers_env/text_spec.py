"""``VerifiersSpec``: a verifiers environment as text for the rollout engine and the
``grpo_text`` recipe (``env.spec: verifiers_env.text_spec:VerifiersSpec``).

The prompt's last user message starts the episode (its system message, if any, is the run's
``rollout.system_prompt`` to set), the model's answer is scored by the rubric, one turn.
"""

from __future__ import annotations

from typing import Any

from openenv_train.rollout import SeededTextSpec

from .models import AnswerAction


class VerifiersSpec(SeededTextSpec):
    """One prompt, one answer; reward = the environment's rubric."""

    invalid_action_reward = 0.0
    truncation_reward = 0.0

    @property
    def client_cls(self) -> Any:  # type: ignore[override]
        from .client import VerifiersEnv

        return VerifiersEnv

    def initial_prompt(self, result: Any, prompt: Any) -> str:
        return result.observation.question

    def render(self, result: Any) -> str:
        return ""  # one answer ends the episode

    def parse_action(self, text: str) -> AnswerAction | None:
        answer = text.replace("<eos>", " ").strip()
        return AnswerAction(answer=answer) if answer else None
