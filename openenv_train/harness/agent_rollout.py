"""Episodes of agents that live inside envs (RFC 005), played against our policy via the proxy.

For each episode: open a capture-proxy episode, ``reset(seed, llm_base_url=<its URL>)`` an env
session (the env starts a fresh agent process pointed at that URL), send the task as turns until
``done``, close. The agent's model calls are batched across all running episodes by the proxy and
recorded token-exactly; the env's verifier gives the reward. An env or harness failure is an
infrastructure error: retried once, then the run fails with counts, never scored.

``make_agent_rollout_func`` wraps this as TRL's ``rollout_func`` (prompts are seeds);
``evaluate_agent`` reports a pass rate.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..client.generic import GenericEnvClient
from ..core.errors import EnvServerError, InfrastructureError
from ..policy.base import Policy
from ..rollout.records import EpisodeRecord, GroupsDroppedError, validate_rollout_output
from .capture import CaptureTrace
from .capture_proxy import CaptureProxy


class AgentEpisodeError(InfrastructureError):
    """An agent episode failed on infrastructure (env, harness process, proxy): never a reward."""


@dataclass
class AgentEpisode:
    seed: int
    reward: float
    turns: int
    trace: CaptureTrace
    response: str = ""


@dataclass
class AgentRunReport:
    episodes: list[AgentEpisode]
    errors: Counter[str] = field(default_factory=Counter)

    @property
    def mean_reward(self) -> float:
        return sum(e.reward for e in self.episodes) / max(1, len(self.episodes))

    def pass_rate(self, threshold: float = 1.0) -> float:
        return sum(e.reward >= threshold for e in self.episodes) / max(1, len(self.episodes))


def seed_of(prompt: Any) -> int:
    """A dataset prompt -> an episode seed: digits are the seed, other text a stable hash."""
    text = str(prompt).strip()
    return int(text) if text.isdigit() else zlib.crc32(text.encode())


class AgentRunner:
    """Plays agent episodes on ``base_urls`` (round robin), every model call through ``proxy``."""

    def __init__(
        self,
        proxy: CaptureProxy,
        base_urls: Sequence[str],
        *,
        max_turns: int = 1,
        max_concurrency: int = 64,
        retries: int = 1,
        timeout: float | None = 300.0,
    ) -> None:
        if not base_urls:
            raise ValueError("base_urls: empty; start env servers first")
        self.proxy = proxy
        self.base_urls = list(base_urls)
        self.max_turns = max_turns
        self.retries = retries
        self.timeout = timeout
        self._limit = asyncio.Semaphore(max_concurrency)

    async def episode(self, seed: int, index: int = 0) -> AgentEpisode:
        """One episode; raises :class:`AgentEpisodeError` on an infrastructure failure."""
        ep = self.proxy.open_episode()
        url = self.base_urls[index % len(self.base_urls)]
        try:
            async with GenericEnvClient(url, timeout=self.timeout) as env:
                first = await env.reset(seed=seed, llm_base_url=ep.base_url)
                message = str(first.observation.get("response") or "")
                reward: float | None = None
                turns = 0
                response = ""
                for turns in range(1, self.max_turns + 1):  # noqa: B007 - turns is reported
                    result = await env.step({"message": message})
                    response = str(result.observation.get("response") or "")
                    reward = result.reward
                    if result.done:
                        break
        except (EnvServerError, InfrastructureError, OSError) as exc:
            raise AgentEpisodeError(f"agent episode (seed {seed}) on {url} failed: {exc}") from exc
        finally:
            trace = self.proxy.close_episode(ep.episode_id)
        if reward is None:
            raise AgentEpisodeError(
                f"the env at {url} scored no reward for seed {seed}; its verifier must return one"
            )
        return AgentEpisode(seed, float(reward), turns, trace, response)

    async def run(self, seeds: Sequence[int]) -> AgentRunReport:
        """All episodes at once (bounded by ``max_concurrency``); each retried ``retries`` times."""
        errors: Counter[str] = Counter()

        async def one(i: int, seed: int) -> AgentEpisode:
            async with self._limit:
                for attempt in range(self.retries + 1):
                    try:
                        return await self.episode(seed, i + attempt)
                    except AgentEpisodeError as exc:
                        errors[type(exc.__cause__ or exc).__name__] += 1
                        if attempt == self.retries:
                            raise
            raise AssertionError("unreachable")

        results = await asyncio.gather(
            *(one(i, s) for i, s in enumerate(seeds)), return_exceptions=True
        )
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            raise GroupsDroppedError(
                f"{len(failed)} of {len(seeds)} agent episodes failed after retries: {failed[0]}",
                dropped=[i for i, r in enumerate(results) if isinstance(r, BaseException)],
                errors=dict(errors),
            )
        return AgentRunReport([r for r in results if isinstance(r, AgentEpisode)], errors)


def records_of(report: AgentRunReport) -> list[EpisodeRecord]:
    return [
        e.trace.to_episode_record(reward=e.reward, row=i, prompt=e.seed, metrics={"turns": e.turns})
        for i, e in enumerate(report.episodes)
    ]


def to_trl(records: list[EpisodeRecord], reward_key: str = "env_reward") -> dict[str, Any]:
    out: dict[str, Any] = {
        "prompt_ids": [r.prompt_ids for r in records],
        "completion_ids": [r.completion_ids for r in records],
        "logprobs": [r.logprobs for r in records],
        "env_mask": [r.env_mask for r in records],
        reward_key: [r.reward for r in records],
    }
    validate_rollout_output(out, len(records), reward_key=reward_key)
    return out


def make_agent_rollout_func(
    base_urls: Sequence[str],
    policy_factory: Callable[[Any], Policy],
    *,
    proxy_options: dict[str, Any] | None = None,
    runner_options: dict[str, Any] | None = None,
    reward_key: str = "env_reward",
) -> Callable[..., dict[str, Any]]:
    """TRL ``rollout_func(prompts, trainer)``: one agent episode per prompt (prompts are seeds).

    ``policy_factory(trainer)`` builds the policy once (e.g. ``trainers.policy_for_trainer``);
    each call runs a fresh proxy on its own event loop in a worker thread (so it also works where
    a loop is already running, e.g. a notebook). ``rollout_func.close()`` releases the policy.
    """
    state: dict[str, Any] = {}

    async def _run(prompts: list[Any], policy: Policy) -> dict[str, Any]:
        async with CaptureProxy(policy, **(proxy_options or {})) as proxy:
            runner = AgentRunner(proxy, base_urls, **(runner_options or {}))
            report = await runner.run([seed_of(p) for p in prompts])
        state["last_report"] = report
        return to_trl(records_of(report), reward_key)

    def rollout_func(prompts: list[Any], trainer: Any = None) -> dict[str, Any]:
        if "policy" not in state:
            state["policy"] = policy_factory(trainer)
        with concurrent.futures.ThreadPoolExecutor(1, "agent-rollout") as pool:
            return pool.submit(asyncio.run, _run(list(prompts), state["policy"])).result()

    def close() -> None:
        policy = state.pop("policy", None)
        if policy is not None:
            with concurrent.futures.ThreadPoolExecutor(1, "agent-rollout") as pool:
                pool.submit(asyncio.run, policy.aclose()).result()

    rollout_func.close = close  # type: ignore[attr-defined]
    rollout_func.state = state  # type: ignore[attr-defined]
    return rollout_func


async def evaluate_agent(
    proxy: CaptureProxy, base_urls: Sequence[str], seeds: Sequence[int], *, threshold: float = 1.0
) -> dict[str, Any]:
    """Evaluation mode: the same agents and envs, any policy behind the proxy; pass rate out."""
    report = await AgentRunner(proxy, base_urls).run(seeds)
    return {
        "episodes": len(report.episodes),
        "pass_rate": report.pass_rate(threshold),
        "mean_reward": report.mean_reward,
        "model_calls": sum(len(e.trace.calls) for e in report.episodes),
        "errors": dict(report.errors),
    }
