"""The batched concurrent rollout engine: B prompts x G generations as B*G concurrent sessions.

Each episode is a multi-turn loop on a pooled env session: render the observation to text (the
``TextEnvSpec``) and tokens (``TokenCodec``), generate through the shared ``GenerationBatcher``
(every episode waiting on the model joins one policy call), parse the action (a parse failure is
an invalid action with its own reward), step. Infrastructure errors are retried on fresh sessions
or drop the whole group (``groups.run_groups``); they never become rewards.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..core.errors import ConnectionLostError, InfrastructureError
from ..policy.base import Policy, SamplingSettings
from .batcher import GenerationBatcher
from .groups import Attempt, run_groups
from .pool import PooledSession, SessionPool
from .records import EpisodeRecord, EpisodeTimeoutError, MissingRewardError, RolloutBatch
from .spec import TextEnvSpec
from .tokens import EpisodeTokens, TokenCodec


@dataclass
class RolloutConfig:
    """Limits and knobs of one engine. Defaults suit short text games like BlackJack."""

    max_turns: int = 16
    max_new_tokens: int = 16  # per model turn
    max_episode_tokens: int = 512  # completion tokens (model + env) per episode
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
    system_prompt: str | None = None
    use_dataset_prompt: bool = False  # prepend TRL's prompt as a system message
    chat_template: bool | None = None  # None: use the tokenizer's template if it has one
    client_timeout_s: float = 30.0
    connect_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        positive = (
            "max_turns",
            "max_new_tokens",
            "max_episode_tokens",
            "max_concurrency",
            "max_batch_size",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"RolloutConfig.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("max_episode_retries", "group_retries"):
            if getattr(self, name) < 0:
                raise ValueError(f"RolloutConfig.{name} must be >= 0, got {getattr(self, name)}")
        if self.episode_timeout_s <= 0:
            raise ValueError(
                f"RolloutConfig.episode_timeout_s must be > 0, got {self.episode_timeout_s}"
            )


_timeout = getattr(asyncio, "timeout", None)


async def within(coro: Any, seconds: float) -> Any:
    """``wait_for`` without a task per call on 3.11+ (``asyncio.timeout``); raises ``asyncio.TimeoutError``."""
    if _timeout is None:  # Python 3.10
        return await asyncio.wait_for(coro, seconds)
    async with _timeout(seconds):
        return await coro


def prompt_messages(prompt: Any) -> list[dict[str, Any]]:
    """TRL's prompt as leading messages: a string is a system message, a conversational prompt
    (a list of ``{"role", "content"}`` dicts) is kept as it is."""
    if isinstance(prompt, str):
        return [{"role": "system", "content": prompt}] if prompt else []
    if isinstance(prompt, list) and all(isinstance(m, dict) and "role" in m for m in prompt):
        return [dict(m) for m in prompt]
    raise ValueError(
        f"prompt: {type(prompt).__name__} is neither a string nor a list of chat messages; "
        "use a standard or conversational TRL dataset"
    )


def base_urls_of(servers: Sequence[Any]) -> list[str]:
    """URLs from strings or providers (anything with ``base_url``), or of a server group or
    ``EnvPool`` (anything with ``base_urls``)."""
    if hasattr(servers, "base_urls"):
        return list(servers.base_urls)
    urls = []
    for s in servers:
        url = s if isinstance(s, str) else getattr(s, "base_url", None)
        if not url:
            raise ValueError(
                f"servers: {s!r} is neither a URL nor a started provider with base_url; "
                "pass provider.base_url strings or started providers"
            )
        urls.append(url)
    return urls


class RolloutEngine:
    """Runs episodes of one ``TextEnvSpec`` env against one ``Policy`` through a session pool.

    Use on one event loop: ``batch = await engine.run(prompts, group_size)``; ``await engine.aclose()``
    (or ``async with``) closes the pooled sessions. See ``engine_rollout_func`` for TRL.
    """

    def __init__(
        self,
        spec: TextEnvSpec,
        policy: Policy,
        servers: Sequence[Any],
        config: RolloutConfig | None = None,
    ) -> None:
        self.spec = spec
        self.policy = policy
        self.config = cfg = config or RolloutConfig()
        tokenizer = getattr(policy, "tokenizer", None)
        if tokenizer is None:
            raise ValueError(
                f"policy: {type(policy).__name__} has no .tokenizer; set it to the model's tokenizer"
            )
        self.codec = TokenCodec(tokenizer, chat_template=cfg.chat_template)
        self.pool = SessionPool(
            lambda url: spec.make_client(
                url, timeout=cfg.client_timeout_s, connect_timeout=cfg.connect_timeout_s
            ),
            base_urls_of(servers),
        )
        self.batcher = GenerationBatcher(
            policy, max_batch_size=cfg.max_batch_size, max_wait_s=cfg.max_wait_s
        )
        eos = getattr(tokenizer, "eos_token_id", None)
        self.sampling = SamplingSettings(
            max_new_tokens=cfg.max_new_tokens,
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            top_k=cfg.top_k,
            stop_token_ids=(eos,) if isinstance(eos, int) else (),
            seed=cfg.seed,
        )

    async def __aenter__(self) -> RolloutEngine:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.batcher.aclose()
        await self.pool.aclose()

    async def run(self, prompts: Sequence[str], group_size: int = 1) -> RolloutBatch:
        """Play one episode per prompt (prompts repeat ``group_size`` times in a row, as in TRL)."""
        self.spec.begin_run()
        calls_before = self.batcher.stats.calls
        seqs_before = self.batcher.stats.sequences
        pool_before = self.pool.stats()
        batch = await run_groups(
            list(prompts),
            group_size,
            self._episode,
            max_concurrency=self.config.max_concurrency,
            max_episode_retries=self.config.max_episode_retries,
            group_retries=self.config.group_retries,
        )
        calls = self.batcher.stats.calls - calls_before
        batch.metrics.update(summarize(batch.records))
        batch.metrics.update(
            policy_calls=calls,
            mean_batch_size=(self.batcher.stats.sequences - seqs_before) / calls if calls else 0.0,
            # per-run counts (connects 0 = every session was reused), and sessions open now
            **{
                k: v - pool_before[k] if k != "open_sessions" else v
                for k, v in self.pool.stats().items()
            },
        )
        return batch

    # -- one attempt of one episode ------------------------------------------------------------

    async def _episode(self, attempt: Attempt) -> EpisodeRecord:
        session = await self.pool.acquire(frozenset(attempt.avoid))
        self.batcher.register()
        try:
            record = await within(self._play(session, attempt), self.config.episode_timeout_s)
        except asyncio.TimeoutError as exc:
            attempt.avoid.add(session.url)
            await self.pool.discard(session)
            raise EpisodeTimeoutError(
                f"episode (row {attempt.row}) ran past episode_timeout_s={self.config.episode_timeout_s}"
            ) from exc
        except InfrastructureError as exc:
            attempt.avoid.add(session.url)
            await self.pool.discard(session, server_failed=isinstance(exc, ConnectionLostError))
            raise
        except BaseException:
            await self.pool.discard(session)
            raise
        finally:
            self.batcher.unregister()
        self.pool.release(session)
        record.metrics["attempts"] = attempt.attempt + 1
        return record

    async def _play(self, session: PooledSession, attempt: Attempt) -> EpisodeRecord:
        spec, cfg, client = self.spec, self.config, session.client
        t0 = time.perf_counter()
        result = await client.reset(**spec.reset_kwargs(attempt.prompt, attempt.group, attempt.row))
        env_s = time.perf_counter() - t0
        if result.done:
            raise MissingRewardError(
                f"the env at {session.url} finished on reset; there is no decision for the model to make"
            )
        messages: list[dict[str, Any]] = []
        if cfg.use_dataset_prompt:
            messages.extend(prompt_messages(attempt.prompt))
        elif cfg.system_prompt:
            messages.append({"role": "system", "content": cfg.system_prompt})
        messages.append({"role": "user", "content": spec.initial_prompt(result, attempt.prompt)})
        toks = EpisodeTokens(self.codec.prompt_ids(messages))
        turns = invalid = env_steps = 0
        truncated = False
        reward: float | None = None
        while True:
            budget = cfg.max_episode_tokens - len(toks.completion_ids)
            if turns >= cfg.max_turns or budget <= 0:
                truncated = True
                break
            sampling = self.sampling
            if budget < sampling.max_new_tokens:
                sampling = replace(sampling, max_new_tokens=budget)
            gen = await self.batcher.generate(toks.context(), sampling)
            if not gen.token_ids:
                raise RuntimeError(
                    f"{type(self.policy).__name__}.generate returned no tokens; a policy must "
                    "generate at least one token per prompt"
                )
            toks.add_model(list(gen.token_ids), list(gen.logprobs))
            turns += 1
            action = spec.parse_action(gen.text)
            if action is None:
                invalid = 1
                reward = float(spec.invalid_action_reward)
                break
            t0 = time.perf_counter()
            result = await client.step(action)
            env_s += time.perf_counter() - t0
            env_steps += 1
            if result.done:
                reward = spec.final_reward(result)
                if reward is None:
                    raise MissingRewardError(
                        f"the env at {session.url} ended the episode without a reward "
                        "(done=True, reward=None)"
                    )
                break
            if turns >= cfg.max_turns:
                truncated = (
                    True  # no env text the model will never answer: records end on a model token
                )
                break
            env_ids = self.codec.turn_ids([{"role": spec.env_role, "content": spec.render(result)}])
            if len(toks.completion_ids) + len(env_ids) >= cfg.max_episode_tokens:
                truncated = True
                break
            toks.add_env(env_ids)
        if truncated:
            reward = float(spec.truncation_reward)
        assert reward is not None
        return EpisodeRecord.of(
            attempt,
            toks,
            reward=reward,
            num_turns=turns,
            metrics={
                "turns": turns,
                "env_steps": env_steps,
                "invalid_actions": invalid,
                "truncated": int(truncated),
                "model_tokens": toks.model_tokens,
                "env_tokens": toks.env_tokens,
                "env_latency_s": env_s,
                "server": session.url,
            },
        )


def summarize(records: Sequence[EpisodeRecord]) -> dict[str, float]:
    """Batch means of the per-episode metrics (what a progress bar or logger shows)."""
    n = len(records)
    if not n:
        return {}
    mean = lambda xs: sum(xs) / n  # noqa: E731
    return {
        "reward_mean": mean([r.reward for r in records]),
        "turns_mean": mean([r.num_turns for r in records]),
        "invalid_rate": mean([r.metrics.get("invalid_actions", 0) for r in records]),
        "truncated_rate": mean([r.metrics.get("truncated", 0) for r in records]),
        "model_tokens_mean": mean([r.metrics.get("model_tokens", 0) for r in records]),
        "env_tokens_mean": mean([r.metrics.get("env_tokens", 0) for r in records]),
        "env_latency_mean_s": mean([r.metrics.get("env_latency_s", 0.0) for r in records]),
    }
