"""``AgentRunner``: episodes of agents that live inside envs (RFC 005), played against our policy.

For each episode: open a capture-proxy episode, ``reset(seed, llm_base_url=<its URL>)`` an env
session (the env starts a fresh agent process pointed at that URL), send the task as turns until
``done``, close. The agent's model calls are batched across all running episodes by the proxy and
recorded token-exactly; the env's verifier gives the reward.

It is a regular ``EpisodeRunner``: ``run(prompts, group_size) -> RolloutBatch`` through the shared
``run_groups`` (an env, harness or proxy failure is an infrastructure error: the episode is
retried on the next server, then its GRPO group, then the group is reported dropped, never
scored), and ``RolloutBatch.to_trl`` makes the TRL rows, so the training side wraps it like any
other runner (``openenv_train.training.make_agent_rollout_func``).

It does not run the one episode loop (``rollout.episode.play_episode``): the agent is a separate
program that owns its loop and calls the model itself, through the proxy. Our side only sends
the turn messages and reads the reward; the episode's tokens are what the proxy recorded
(``CaptureTrace.to_episode_record``), not turns we generated.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..client.generic import GenericEnvClient
from ..core.errors import EnvServerError
from ..policy.interface import Policy
from ..rollout.episode import RolloutConfig, within
from ..rollout.episode_runner import EpisodeRunner
from ..rollout.groups import Attempt
from ..rollout.records import EpisodeRecord, EpisodeTimeoutError, MissingRewardError, RolloutBatch
from .capture import CaptureTrace
from .capture_proxy import CaptureProxy
from .errors import AgentEpisodeError as AgentEpisodeError

#: Limits for agent episodes when no config is given: ``max_turns`` counts the messages sent
#: to the agent, ``max_new_tokens`` caps each of its model calls, ``client_timeout_s`` bounds
#: one whole agent turn (many model and tool calls).
AGENT_LIMITS = RolloutConfig(
    max_turns=1,
    max_new_tokens=256,
    episode_timeout_s=300.0,
    client_timeout_s=300.0,
    max_concurrency=64,
    max_wait_s=0.02,
    max_episode_retries=1,
    group_retries=0,
)


def seed_of(prompt: Any) -> int:
    """A dataset prompt -> an episode seed: digits are the seed, other text a stable hash."""
    text = str(prompt).strip()
    return int(text) if text.isdigit() else zlib.crc32(text.encode())


class AgentRunner(EpisodeRunner):
    """Plays one agent episode per prompt (a seed) on ``base_urls``, every model call of every
    agent through one capture proxy serving ``policy``.

    ``proxy_options`` go to :class:`CaptureProxy` (``max_prompt_tokens``, ``host``...); the
    proxy starts with the first run. ``last_traces[row]`` is the capture trace of each row of
    the last run (None where the group was dropped).
    """

    def __init__(
        self,
        policy: Policy,
        base_urls: Sequence[str],
        *,
        config: RolloutConfig | None = None,
        proxy_options: dict[str, Any] | None = None,
    ) -> None:
        if not base_urls:
            raise ValueError("base_urls: empty; start env servers first")
        super().__init__(config or replace(AGENT_LIMITS), policy)  # a copy: configs are mutable
        assert self.batcher is not None and self.codec is not None
        options = {
            "max_new_tokens": self.config.max_new_tokens,
            "temperature": self.config.temperature,
            **(proxy_options or {}),
        }
        self.proxy = CaptureProxy(policy, codec=self.codec, batcher=self.batcher, **options)
        self.base_urls = list(base_urls)
        self.last_traces: list[CaptureTrace | None] = []
        self._traces: dict[int, CaptureTrace] = {}

    async def run(self, prompts: Sequence[Any], group_size: int = 1) -> RolloutBatch:
        if self.proxy.url is None:
            await self.proxy.start()
        self._traces = {}
        batch = await super().run(prompts, group_size)
        self.last_traces = [self._traces.get(r.row) if r is not None else None for r in batch.rows]
        return batch

    async def aclose(self) -> None:
        """Stop the proxy and the batcher (the policy belongs to whoever made it)."""
        await self.proxy.stop()
        await super().aclose()

    async def _episode(self, attempt: Attempt) -> EpisodeRecord:
        url = self.base_urls[(attempt.row + attempt.attempt) % len(self.base_urls)]
        seed = seed_of(attempt.prompt)
        ep = self.proxy.open_episode()  # counted by the batcher while it runs
        try:
            reward, turns = await within(
                self._play(url, seed, ep.base_url), self.config.episode_timeout_s
            )
        except asyncio.TimeoutError as exc:
            raise EpisodeTimeoutError(
                f"agent episode (row {attempt.row}, seed {seed}) on {url} ran past "
                f"episode_timeout_s={self.config.episode_timeout_s}"
            ) from exc
        except (EnvServerError, OSError) as exc:
            raise AgentEpisodeError(f"agent episode (seed {seed}) on {url} failed: {exc}") from exc
        finally:
            trace = self.proxy.close_episode(ep.episode_id)
        if reward is None:
            raise MissingRewardError(
                f"the env at {url} scored no reward for seed {seed}; its verifier must return one"
            )
        self._traces[attempt.row] = trace
        return trace.to_episode_record(
            reward=reward,
            row=attempt.row,
            group=attempt.group,
            prompt=attempt.prompt,
            metrics={"turns": turns, "attempts": attempt.attempt + 1},
        )

    async def _play(self, url: str, seed: int, llm_base_url: str) -> tuple[float | None, int]:
        """Reset (the env starts its agent), then turns until done; (reward, turns)."""
        cfg = self.config
        async with GenericEnvClient(
            url, timeout=cfg.client_timeout_s, connect_timeout=cfg.connect_timeout_s
        ) as env:
            first = await env.reset(seed=seed, llm_base_url=llm_base_url)
            message = str(first.observation.get("response") or "")
            reward: float | None = None
            turns = 0
            for turns in range(1, cfg.max_turns + 1):  # noqa: B007 - turns is reported
                result = await env.step({"message": message})
                reward = result.reward
                if result.done:
                    break
        return (None if reward is None else float(reward)), turns


async def evaluate_agent(
    policy: Policy,
    base_urls: Sequence[str],
    seeds: Sequence[Any],
    *,
    config: RolloutConfig | None = None,
    threshold: float = 1.0,
) -> dict[str, Any]:
    """Evaluation mode: the same agents and envs, any policy behind the proxy; pass rate out."""
    async with AgentRunner(policy, base_urls, config=config) as runner:
        batch = await runner.run(list(seeds))
    records = batch.records
    n = max(1, len(records))
    return {
        "episodes": len(records),
        "pass_rate": sum(r.reward >= threshold for r in records) / n,
        "mean_reward": sum(r.reward for r in records) / n,
        "model_calls": sum(r.metrics["model_calls"] for r in records),
        "groups_dropped": len(batch.dropped_groups),
        "errors": dict(batch.errors),
    }
