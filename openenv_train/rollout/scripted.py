"""``ScriptedPolicy``: a real ``Policy`` that answers from a Python function instead of a model.

It decodes each prompt's ids with the tokenizer, asks ``respond(text)`` for the answer text, and
returns that answer's ids plus EOS (logprob 0.0: the choice is deterministic). Benchmarks use it
to measure the engine's own overhead; tests use it to drive envs and tool loops with known answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..policy.interface import Generation, Policy, SamplingSettings


class ScriptedPolicy(Policy):
    """``respond(prompt_text) -> answer_text``; ``delay_s`` simulates model latency per batch call.

    ``tail_tokens`` limits decoding to the last N prompt ids (enough for a decision in games that
    re-render the state every turn; keeps the cost flat as episodes grow) and caches the answer per
    tail, so ``respond`` must then depend on the tail only. ``None`` decodes all, every time.
    """

    def __init__(
        self,
        tokenizer: Any,
        respond: Callable[[str], str],
        *,
        delay_s: float = 0.0,
        tail_tokens: int | None = None,
        add_eos: bool = True,
    ) -> None:
        self.tokenizer = tokenizer
        self.respond = respond
        self.delay_s = delay_s
        self.tail_tokens = tail_tokens
        self.add_eos = add_eos
        self.calls = 0
        self.prompts_seen = 0
        eos = getattr(tokenizer, "eos_token_id", None)
        if add_eos and not isinstance(eos, int):
            raise ValueError("tokenizer has no eos_token_id; set one or pass add_eos=False")
        self._eos = eos
        self._answers: dict[str, list[int]] = {}
        self._by_tail: dict[tuple[int, ...], str] = {}

    def _answer_ids(self, answer: str) -> list[int]:
        ids = self._answers.get(answer)
        if ids is None:
            ids = list(self.tokenizer.encode(answer, add_special_tokens=False))
            if self.add_eos:
                ids.append(self._eos)
            if len(self._answers) < 4096:
                self._answers[answer] = ids
        return ids

    async def generate(
        self, prompts: list[list[int]], sampling: SamplingSettings
    ) -> list[Generation]:
        self.calls += 1
        self.prompts_seen += len(prompts)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        out = []
        for ids in prompts:
            tail = ids[-self.tail_tokens :] if self.tail_tokens else ids
            key = tuple(tail) if self.tail_tokens else None
            answer = self._by_tail.get(key) if key is not None else None
            if answer is None:
                answer = self.respond(self.tokenizer.decode(tail, skip_special_tokens=False))
                if key is not None and len(self._by_tail) < 65536:
                    self._by_tail[key] = answer  # respond() is a function of the tail text
            token_ids = self._answer_ids(answer)
            finish = "stop"
            if len(token_ids) > sampling.max_new_tokens:
                token_ids, finish = token_ids[: sampling.max_new_tokens], "length"
                answer = self.tokenizer.decode(token_ids, skip_special_tokens=True)
            out.append(Generation(list(token_ids), [0.0] * len(token_ids), answer, finish))
        return out
