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

from ..policy.interface import Generation, SamplingSettings
from .episode_spans import traced_turns
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
    #: the episode's reward when ``stop`` ends it (kept only by an :class:`EpisodeRecorder`)
    reward: float | None = None


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
    recorder: EpisodeRecorder | None = None,
) -> Episode:
    """Alternate model turns and ``respond`` until it stops the episode or a limit is reached.

    ``generate(context_ids, sampling)`` samples one turn (usually ``GenerationBatcher.generate``,
    so concurrent episodes share policy calls); ``tools`` go to the chat template. ``recorder``
    (given by whoever wants the run viewer's samples) keeps the episode decoded turn by turn.
    """
    slot = recorder.reserve() if recorder is not None else None
    last: list[Reply] = []
    generate, respond = traced_turns(generate, respond)  # spans when tracing is on
    episode = await _loop(
        messages,
        generate,
        codec,
        config,
        respond,
        sampling,
        tools,
        last if slot is not None else None,
    )
    if slot is not None:
        slot.fill(episode, codec, last[-1] if last else None)
    return episode


async def _loop(
    messages: list[Message],
    generate: Generate,
    codec: TokenCodec,
    config: RolloutConfig,
    respond: Respond,
    sampling: SamplingSettings | None,
    tools: list[dict[str, Any]] | None,
    last: list[Reply] | None,
) -> Episode:
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
        tokens.add_model(list(gen.token_ids), list(gen.logprobs), gen.text)
        turns += 1
        reply = await respond(gen)
        if last is not None:  # recorded: the end's text and reward
            last[:] = [reply]
        if reply.stop:
            return Episode(tokens, turns, reply.stop)
        if turns >= config.max_turns:  # env text the model would never answer stays out
            return Episode(tokens, turns, LIMIT)
        env_ids = codec.turn_ids(reply.messages)
        if len(tokens.completion_ids) + len(env_ids) >= config.max_episode_tokens:
            return Episode(tokens, turns, LIMIT)
        tokens.add_env(env_ids)


class _Slot:
    """One episode an :class:`EpisodeRecorder` keeps, filled in when the episode ends."""

    def __init__(self, into: list[dict[str, Any]], index: int) -> None:
        self.into, self.index = into, index

    def fill(self, episode: Episode, codec: TokenCodec, last: Reply | None) -> None:
        self.put(episode_turns(episode, codec, last))

    def put(self, record: dict[str, Any]) -> None:
        """Keep ``record`` (an episode already decoded: a self-play game's seats) in this place."""
        self.into[self.index] = record


class EpisodeRecorder:
    """Keeps the first ``limit`` episodes it is given (``play_episode(..., recorder=)``,
    ``RolloutEngine(..., recorder=)``) in the order they start, so seeded evals line up, decoded
    turn by turn: the run viewer's samples. Like Gymnasium's recording wrappers it is passed in
    by whoever wants the records; an episode played without one decodes and keeps nothing."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._episodes: list[dict[str, Any]] = []

    def reserve(self) -> _Slot | None:
        if len(self._episodes) >= self.limit:
            return None
        self._episodes.append({})
        return _Slot(self._episodes, len(self._episodes) - 1)

    @property
    def episodes(self) -> list[dict[str, Any]]:
        """The episodes that ended (one still in play is left out)."""
        return [e for e in self._episodes if e]


def episode_turns(episode: Episode, codec: TokenCodec, last: Reply | None) -> dict[str, Any]:
    """One episode as JSON-ready turns: the prompt, each model answer (text, tokens, logprobs),
    each env text, and the end (stop reason, reward when the env side gave one)."""
    turns = token_turns(episode.tokens, codec.tokenizer)
    if last is not None and last.stop and last.messages:
        turns.append(
            {"role": "env", "text": "\n".join(str(m.get("content", "")) for m in last.messages)}
        )
    reward = last.reward if last is not None and last.stop else None
    return {"reward": reward, "stop": episode.stop, "num_turns": episode.turns, "turns": turns}


def token_turns(t: Any, tok: Any) -> list[dict[str, Any]]:
    """The turns of an episode's tokens (anything with ``prompt_ids``, ``completion_ids``,
    ``env_mask``, ``logprobs``: ``EpisodeTokens``, an ``EpisodeRecord``): the prompt, then each
    run of model tokens (text, token ids, tokens, logprobs) or env tokens (text, token ids).

    A model turn's ``text`` is exactly what the env side received: the recorded
    ``model_texts`` when there is one per model run, else the ids decoded as every backend
    decodes them (special tokens skipped). ``tokens`` still shows every sampled token."""
    runs = _runs(t.env_mask)
    texts = list(getattr(t, "model_texts", None) or [])
    if len(texts) != sum(1 for start, _ in runs if t.env_mask[start]):
        texts = []  # not one text per model run (two turns with no env text between them)
    turns: list[dict[str, Any]] = [
        {"role": "prompt", "text": tok.decode(t.prompt_ids), "token_ids": list(t.prompt_ids)}
    ]
    for start, end in runs:
        ids = list(t.completion_ids[start:end])
        if t.env_mask[start]:
            text = texts.pop(0) if texts else tok.decode(ids, skip_special_tokens=True)
            turns.append(
                {
                    "role": "model",
                    "text": text,
                    "token_ids": ids,
                    "tokens": [tok.decode([i]) for i in ids],
                    "logprobs": [round(x, 4) for x in t.logprobs[start:end]],
                }
            )
        else:
            turns.append({"role": "env", "text": tok.decode(ids), "token_ids": ids})
    return turns


def _runs(mask: list[int]) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of equal values in ``mask``."""
    runs, start = [], 0
    while start < len(mask):
        end = start
        while end < len(mask) and mask[end] == mask[start]:
            end += 1
        runs.append((start, end))
        start = end
    return runs


_timeout = getattr(asyncio, "timeout", None)


async def within(coro: Any, seconds: float) -> Any:
    """``wait_for`` without a task per call on 3.11+ (``asyncio.timeout``); raises ``asyncio.TimeoutError``."""
    if _timeout is None:  # Python 3.10
        return await asyncio.wait_for(coro, seconds)
    async with _timeout(seconds):
        return await coro
