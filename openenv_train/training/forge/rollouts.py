"""Whole GRPO groups of multi-turn episodes as forge episodes: the rollout actor's work, plain.

``Rollouts`` owns one rollout engine (its env sessions on our servers stay open between calls)
and a ``GeneratorPolicy`` over any forge-style generator. ``RolloutActor`` serves it over
Monarch; the forge backend may call it in-process. Episodes are tagged with the OLDEST generator
version any of their turns used, so the replay buffer's ``max_policy_age`` errs on the safe side.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ...rollout.engine import RolloutConfig, RolloutEngine
from ...rollout.spec import TextEnvSpec
from .generate import GeneratorPolicy
from .shapes import Group, groups_from_records


def load_tokenizer(path: str) -> Any:
    """A local tiny-model folder (``PreTrainedTokenizerFast``) or a hub id (``AutoTokenizer``)."""
    if (Path(path) / "tokenizer.json").is_file():
        from ...policy.tiny import load_tiny_tokenizer

        return load_tiny_tokenizer(path)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


class Rollouts:
    def __init__(
        self,
        spec: TextEnvSpec,
        base_urls: list[str],
        generator: Any,
        tokenizer: Any,
        *,
        rollout: dict[str, Any] | None = None,
        request_len: int = 16,
        response_len: int = 64,
        prompt: str = "blackjack",
    ) -> None:
        config = RolloutConfig(**{"max_episode_tokens": response_len, **(rollout or {})})
        if config.max_episode_tokens > response_len:
            raise ValueError(
                f"rollout.max_episode_tokens={config.max_episode_tokens} exceeds "
                f"max_res_tokens={response_len}; the response tensor must hold every episode"
            )
        self.tokenizer = tokenizer
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else tokenizer.eos_token_id)
        self.policy = GeneratorPolicy(generator, tokenizer)
        self.engine = RolloutEngine(spec, self.policy, base_urls, config)
        self.shape = {"request_len": request_len, "response_len": response_len}
        self.prompt = prompt

    async def rollout(self, num_groups: int, group_size: int) -> tuple[list[Group], dict[str, Any]]:
        """``num_groups`` groups of ``group_size`` episodes with advantages, and batch metrics."""
        self.policy.mark()
        t0 = time.perf_counter()
        batch = await self.engine.run([self.prompt] * (num_groups * group_size), group_size)
        version = self.policy.oldest_version()
        groups = groups_from_records(
            batch.records,
            group_size,
            pad_id=self.pad_id,
            policy_version=0 if version is None else version,
            **self.shape,
        )
        numeric = {k: v for k, v in batch.metrics.items() if isinstance(v, (int, float))}
        return groups, {
            **numeric,
            "dropped_groups": len(batch.dropped_groups),
            "rollout_s": time.perf_counter() - t0,
            "policy_version": version,
        }

    async def close(self) -> None:
        await self.engine.aclose()
