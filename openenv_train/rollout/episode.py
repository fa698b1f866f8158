"""The one multi-turn episode loop: the engine, the harness and recipe evaluations all run it.

An episode starts from chat messages; each model turn is generated from exactly the tokens
recorded so far, then a ``respond`` callback (the env side: step a game, run tool calls) answers
with env text for the next turn or a reason to stop. The loop owns what every caller shares: the
turn limit, the per-episode token budget (a turn never asks for more tokens than are left, and env
text that would overflow the budget ends the episode instead), and the token record
(``EpisodeTokens``: model tokens with their logprobs, env tokens masked out).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..policy.base import Generation, SamplingSettings
from .tokens import EpisodeTokens, Message, TokenCodec

#: ``Episode.stop`` when ``max_turns`` or the episode token budget ended the episode.
LIMIT = "limit"


@dataclass
class RolloutConfig:
    """Limits and knobs of one rollout: episode limits, sampling, concurrency, retries.

    The same type configures the engine, the harness runner and TRL rollout functions. Defaults
    suit short text games like BlackJack; tool calling wants more tokens per turn (for example
    ``max_new_tokens=256, max_episode_tokens=4096``).
    """

    max_turns: int = 16
    max_new_tokens: int = 16  # per model turn
    max_episode_tokens: int = 512  # completion tokens (model + env) per episode
    max_tool_calls_per_turn: int | None = None  # harness tool calling: extra calls are ignored
    max_total_tool_calls: int | None = None  # harness tool calling: the episode stops there
    episode_timeout_s: float = 120.0
    max_concurrency: int = 256  # sessions in flight
    max_batch_size: int = 256  # sequences per policy call
    max_wait_s: float = 0.005  # how long a partial batch waits for more episodes
    max_episode_retries: int = 2
    group_retries: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    #: deterministic sampling: each episode turn draws from its own stream seeded by
    #: (episode_seed, batch, row, attempt, turn), so batching by timing changes nothing
    #: (policies that ``supports_row_seeds``; others fall back to ``seed``)
    episode_seed: int | None = None
    system_prompt: str | None = None
    use_dataset_prompt: bool = False  # prepend TRL's prompt as a system message
    chat_template: bool | None = None  # None: use the tokenizer's template if it has one
    client_timeout_s: float = 30.0
    connect_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        for name in (
            "max_turns",
            "max_new_tokens",
            "max_episode_tokens",
            "max_concurrency",
            "max_batch_size",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"RolloutConfig.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("max_episode_retries", "group_retries"):
            if getattr(self, name) < 0:
                raise ValueError(f"RolloutConfig.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("max_tool_calls_per_turn", "max_total_tool_calls"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"RolloutConfig.{name} must be >= 0 or None, got {value}")
        if self.episode_timeout_s <= 0:
            raise ValueError(
                f"RolloutConfig.episode_timeout_s must be > 0, got {self.episode_timeout_s}"
            )

    def sampling(self, tokenizer: Any) -> SamplingSettings:
        """Per-turn sampling settings; generation stops at the tokenizer's EOS."""
        eos = getattr(tokenizer, "eos_token_id", None)
        return SamplingSettings(
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            stop_token_ids=(eos,) if isinstance(eos, int) else (),
            seed=self.seed,
        )


@dataclass
class Reply:
    """The env side's answer to one model turn: text for the next turn, or why the episode ends
    (``"done"``, ``"invalid"``, ``"no_tool_call"``...; any non-empty reason stops)."""

    messages: list[Message] = field(default_factory=list)
    stop: str | None = None


@dataclass
class Episode:
    """What the loop recorded: the tokens, the number of model turns and why it stopped."""

    tokens: EpisodeTokens
    turns: int
    stop: str

    @property
    def truncated(self) -> bool:
        return self.stop == LIMIT

    def metrics(self) -> dict[str, Any]:
        """The per-episode metrics every runner reports (same names, same meaning)."""
        return {
            "turns": self.turns,
            "stop_reason": self.stop,
            "truncated": int(self.truncated),
            "model_tokens": self.tokens.model_tokens,
            "env_tokens": self.tokens.env_tokens,
        }


Generate = Callable[[list[int], SamplingSettings], Awaitable[Generation]]
Respond = Callable[[Generation], Awaitable[Reply]]


async def play_episode(
    messages: list[Message],
    *,
    generate: Generate,
    codec: TokenCodec,
    config: RolloutConfig,
    respond: Respond,
    sampling: SamplingSettings | None = None,
    tools: list[dict[str, Any]] | None = None,
) -> Episode:
    """Alternate model turns and ``respond`` until it stops the episode or a limit is reached.

    ``generate(context_ids, sampling)`` samples one turn (usually ``GenerationBatcher.generate``,
    so concurrent episodes share policy calls); ``tools`` go to the chat template.
    """
    sampling = sampling or config.sampling(codec.tokenizer)
    tokens = EpisodeTokens(codec.prompt_ids(messages, tools))
    turns = 0
    while True:
        budget = config.max_episode_tokens - len(tokens.completion_ids)
        if turns >= config.max_turns or budget <= 0:
            return Episode(tokens, turns, LIMIT)
        turn_sampling = (
            sampling
            if budget >= sampling.max_new_tokens
            else replace(sampling, max_new_tokens=budget)
        )
        gen = await generate(tokens.context(), turn_sampling)
        if not gen.token_ids:
            raise RuntimeError(
                "the policy returned no tokens; a policy must generate at least one token per prompt"
            )
        tokens.add_model(list(gen.token_ids), list(gen.logprobs))
        turns += 1
        reply = await respond(gen)
        if reply.stop:
            return Episode(tokens, turns, reply.stop)
        if turns >= config.max_turns:  # env text the model would never answer stays out
            return Episode(tokens, turns, LIMIT)
        env_ids = codec.turn_ids(reply.messages)
        if len(tokens.completion_ids) + len(env_ids) >= config.max_episode_tokens:
            return Episode(tokens, turns, LIMIT)
        tokens.add_env(env_ids)


_timeout = getattr(asyncio, "timeout", None)


async def within(coro: Any, seconds: float) -> Any:
    """``wait_for`` without a task per call on 3.11+ (``asyncio.timeout``); raises ``asyncio.TimeoutError``."""
    if _timeout is None:  # Python 3.10
        return await asyncio.wait_for(coro, seconds)
    async with _timeout(seconds):
        return await coro
