"""The batched concurrent rollout engine: B prompts x G generations as B*G concurrent sessions.

Each episode is the shared loop (``episode.play_episode``) on a pooled env session: render the
observation to text (the ``TextEnvSpec``) and tokens (``TokenCodec``), generate through the shared
``GenerationBatcher`` (every episode waiting on the model joins one policy call), parse the action
(a parse failure is an invalid action with its own reward), step. Infrastructure errors are
retried on fresh sessions or drop the whole group (``groups.run_groups``); they never become
rewards.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ..core.errors import ConnectionLostError, InfrastructureError
from ..policy.interface import Generation, Policy
from .batcher import seeded_turns
from .episode import EpisodeRecorder, Reply, RolloutConfig, play_episode
from .episode_runner import EpisodeRunner
from .episode_spans import rollout_span
from .groups import Attempt
from .records import EpisodeRecord, MissingRewardError, RolloutBatch
from .session_pool import PooledSession, SessionPool
from .spec import TextEnvSpec


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


class RolloutEngine(EpisodeRunner):
    """Runs episodes of one ``TextEnvSpec`` env against one ``Policy`` through a session pool.

    Use on one event loop: ``batch = await engine.run(prompts, group_size)``; ``await engine.aclose()``
    (or ``async with``) closes the pooled sessions. ``openenv_train.training.make_rollout_func``
    wraps one for TRL.
    """

    def __init__(
        self,
        spec: TextEnvSpec,
        policy: Policy,
        servers: Sequence[Any],
        config: RolloutConfig | None = None,
        *,
        recorder: EpisodeRecorder | None = None,
    ) -> None:
        super().__init__(config or RolloutConfig(), policy)
        cfg = self.config
        self.spec = spec
        self.recorder = recorder  # keeps the episodes' turns for the run viewer (evals)
        self.pool = SessionPool(
            lambda url: spec.make_client(
                url, timeout=cfg.client_timeout_s, connect_timeout=cfg.connect_timeout_s
            ),
            base_urls_of(servers),
        )
        self.sampling = cfg.sampling(policy.tokenizer)
        self._runs = 0  # batches played: part of every episode's sampling stream

    async def aclose(self) -> None:
        await super().aclose()
        await self.pool.aclose()

    async def run(self, prompts: Sequence[Any], group_size: int = 1) -> RolloutBatch:
        self.spec.begin_run()
        self._runs += 1
        pool_before = self.pool.stats()
        batch = await super().run(prompts, group_size)
        # per-run counts (connects 0 = every session was reused), and sessions open now
        batch.metrics.update(
            {
                k: v - pool_before[k] if k != "open_sessions" else v
                for k, v in self.pool.stats().items()
            }
        )
        return batch

    # -- one attempt of one episode ------------------------------------------------------------

    async def _episode(self, attempt: Attempt) -> EpisodeRecord:
        # counted while its session connects too: the first turn's batch waits (up to
        # max_wait_s) for episodes still connecting instead of flushing without them
        with self._waits_on_model():
            session = await self.pool.acquire(frozenset(attempt.avoid))
            try:
                record = await self._bounded(self._play(session, attempt), attempt.row)
            except InfrastructureError as exc:
                attempt.avoid.add(session.url)
                await self.pool.discard(session, server_failed=isinstance(exc, ConnectionLostError))
                raise
            except BaseException:
                await self.pool.discard(session)
                raise
        self.pool.release(session)
        record.metrics["attempts"] = attempt.attempt + 1
        return record

    async def _play(self, session: PooledSession, attempt: Attempt) -> EpisodeRecord:
        spec, cfg, client = self.spec, self.config, session.client
        t0 = time.perf_counter()
        with rollout_span("env.reset"):
            result = await client.reset(
                **spec.reset_kwargs(attempt.prompt, attempt.group, attempt.row)
            )
        env = {"s": time.perf_counter() - t0, "steps": 0, "reward": None}
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

        async def respond(gen: Generation) -> Reply:
            action = spec.parse_action(gen.text)
            if action is None:
                return Reply(stop="invalid", reward=float(spec.invalid_action_reward))
            t0 = time.perf_counter()
            step = await client.step(action)
            env["s"] += time.perf_counter() - t0
            env["steps"] += 1
            if step.done:
                env["reward"] = spec.final_reward(step)
                if env["reward"] is None:
                    raise MissingRewardError(
                        f"the env at {session.url} ended the episode without a reward "
                        "(done=True, reward=None)"
                    )
                return Reply(stop="done", reward=env["reward"])
            return Reply([{"role": spec.env_role, "content": spec.render(step)}])

        assert self.batcher is not None and self.codec is not None
        generate = self.batcher.generate
        if cfg.episode_seed is not None:
            generate = seeded_turns(
                generate, cfg.episode_seed, self._runs, attempt.row, attempt.attempt
            )
        episode = await play_episode(
            messages,
            generate=generate,
            codec=self.codec,
            config=cfg,
            respond=respond,
            sampling=self.sampling,
            recorder=self.recorder,
        )
        if episode.stop == "invalid":
            reward = float(spec.invalid_action_reward)
        elif episode.truncated:
            reward = float(spec.truncation_reward)
        else:
            reward = env["reward"]
        return EpisodeRecord.of(
            attempt,
            episode.tokens,
            reward=reward,
            num_turns=episode.turns,
            metrics={
                **episode.metrics(),
                "env_steps": env["steps"],
                "invalid_actions": int(episode.stop == "invalid"),
                "env_latency_s": env["s"],
                "server": session.url,
            },
        )
