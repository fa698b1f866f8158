"""``LLMJudge``: a rubric that asks a language model for a score (LLM-as-a-judge).

The model is pluggable: pass OpenEnv's ``client=`` (an ``openenv_train.judge.llm_client``
client such as ``OpenAIClient``, or anything with ``complete(prompt)``, sync or async) or
``judge=`` (any callable ``prompt -> str``, sync or async). Nothing here opens a connection itself.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..core.rubrics.rubric import Rubric


class CompletionClient(Protocol):
    """What ``LLMJudge(client=...)`` needs: ``LLMClient.complete`` (``judge.llm_client``)."""

    def complete(self, prompt: str) -> str | Awaitable[str]: ...


Judge = Callable[[str], "str | Awaitable[str]"]


class LLMJudge(Rubric):
    """Format ``prompt_template`` with ``{action}`` and ``{observation}``, ask the judge, and
    parse the first number of its answer (``score_pattern``) into the score.

    An answer with no number scores ``default_score``; with ``normalize`` the score is clamped
    to [0, 1]. Calling the rubric returns an awaitable (the judge is I/O).
    """

    def __init__(
        self,
        prompt_template: str,
        client: CompletionClient | None = None,
        *,
        judge: Judge | None = None,
        score_pattern: str | None = None,
        default_score: float = 0.0,
        normalize: bool = True,
    ) -> None:
        super().__init__()
        if (client is None) == (judge is None):
            raise ValueError(
                "LLMJudge: pass exactly one of client= (with a complete(prompt) method) or "
                "judge= (a callable prompt -> answer text)"
            )
        self.prompt_template = prompt_template
        self._client = client
        self._judge = judge
        self._score_pattern = re.compile(score_pattern or r"(\d+\.?\d*)")
        self.default_score = default_score
        self.normalize = normalize

    async def forward(self, action: Any, observation: Any) -> float:
        prompt = self._render_prompt(action, observation)
        # the client is read per call, as in OpenEnv: a swapped ``_client`` is the one asked
        ask = self._judge if self._judge is not None else self._client.complete  # type: ignore[union-attr]
        answer = ask(prompt)
        if inspect.isawaitable(answer):
            answer = await answer
        return self._parse_score(str(answer))

    def _render_prompt(self, action: Any, observation: Any) -> str:
        """The prompt for one step; override for custom prompt construction."""
        return self.prompt_template.format(action=action, observation=observation)

    def _parse_score(self, response: str) -> float:
        match = self._score_pattern.search(response)
        if match is None:
            return self.default_score
        try:
            score = float(match.group(1) if match.lastindex else match.group(0))
        except (ValueError, IndexError):
            return self.default_score
        return max(0.0, min(1.0, score)) if self.normalize else score

    def state_dict(self) -> dict[str, Any]:
        return {
            "prompt_template": self.prompt_template,
            "score_pattern": self._score_pattern.pattern,
            "default_score": self.default_score,
            "normalize": self.normalize,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "prompt_template" in state:
            self.prompt_template = state["prompt_template"]
        if "score_pattern" in state:
            self._score_pattern = re.compile(state["score_pattern"])
        if "default_score" in state:
            self.default_score = state["default_score"]
        if "normalize" in state:
            self.normalize = state["normalize"]
