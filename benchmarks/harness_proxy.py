"""Agents inside envs through the capture proxy: 64 agent processes at once vs one after another.

Each episode is the notes task played by the reference ReAct agent (a real Python process with
the openai and MCP SDK clients) inside a notes env server, its model calls going to the capture
proxy. The policy is the scripted solver with a fixed ``--model-latency`` per batched generate
call (standing in for one forward pass of a real model; the proxy and the agents are what is
measured). Phases: ``start`` (reset: agent processes start; all of them before any turn when
concurrent) and ``turn`` (the agents work: model calls, tool calls); policy calls/s is over the
turn phase. Interleaved repeats, medians; never asserts. Target: concurrent >= 8x sequential in policy calls/s.
Usage: python benchmarks/harness_proxy.py [--agents 64] [--servers 4] [--model-latency 0.05]
       [--repeats 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from notes_env import scripted_answer
from notes_env.tiny import notes_tokenizer
from rich.console import Console
from rich.table import Table

from openenv_train.agents.capture_proxy import CaptureProxy
from openenv_train.client import GenericEnvClient
from openenv_train.rollout import ScriptedPolicy
from openenv_train.runtime import start_local_servers


class Gate:
    """All agents start (reset) before any turn begins, so the turn phase measures turns only."""

    def __init__(self, n: int) -> None:
        self.n, self.event = n, asyncio.Event()

    async def wait(self) -> None:
        self.n -= 1
        if self.n <= 0:
            self.event.set()
        await self.event.wait()


async def play(
    proxy: CaptureProxy, url: str, seed: int, marks: dict[str, float], gate: Gate | None
) -> int:
    """One episode; returns its model calls. ``marks`` gets the turn phase's start/end times."""
    ep = proxy.open_episode()
    try:
        async with GenericEnvClient(url, timeout=600) as env:
            first = await env.reset(seed=seed, llm_base_url=ep.base_url)
            if gate is not None:
                await gate.wait()
            start = time.perf_counter()
            marks["turn_start"] = min(marks.get("turn_start", start), start)
            result = await env.step({"message": first.observation["response"]})
            marks["turn_end"] = max(marks.get("turn_end", 0.0), time.perf_counter())
            marks["turn_s"] = marks.get("turn_s", 0.0) + (time.perf_counter() - start)
            assert result.reward == 1.0, result
    finally:
        trace = proxy.close_episode(ep.episode_id)
    return len(trace.calls)


async def measure(urls: list[str], agents: int, latency: float, concurrent: bool) -> dict[str, Any]:
    policy = ScriptedPolicy(notes_tokenizer(), scripted_answer, delay_s=latency)
    async with CaptureProxy(policy, max_wait_s=0.05) as proxy:
        marks: dict[str, float] = {}
        t0 = time.perf_counter()
        if concurrent:
            gate = Gate(agents)
            calls = await asyncio.gather(
                *(play(proxy, urls[i % len(urls)], i, marks, gate) for i in range(agents))
            )
            turn_wall = marks["turn_end"] - marks["turn_start"]
        else:
            calls = [await play(proxy, urls[i % len(urls)], i, marks, None) for i in range(agents)]
            turn_wall = marks["turn_s"]  # the turn phases only, summed
        wall = time.perf_counter() - t0
        stats = proxy.batcher.stats
    return {
        "episodes": agents,
        "policy_calls": sum(calls),
        "generate_calls": stats.calls,
        "mean_batch": stats.mean_batch,
        "turn_s": turn_wall,
        "wall_s": wall,
        "calls_per_s": sum(calls) / turn_wall,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=64)
    ap.add_argument("--servers", type=int, default=4)
    ap.add_argument("--model-latency", type=float, default=0.05)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    console = Console()
    runs: dict[str, list[dict[str, Any]]] = {"concurrent": [], "sequential": []}
    with start_local_servers(
        "notes_env.server.app:app", args.servers, env={"NOTES_MAX_SESSIONS": "256"}
    ) as servers:
        for r in range(args.repeats):
            for name in (
                ("concurrent", "sequential") if r % 2 == 0 else ("sequential", "concurrent")
            ):
                result = asyncio.run(
                    measure(
                        servers.base_urls, args.agents, args.model_latency, name == "concurrent"
                    )
                )
                runs[name].append(result)
                console.log(name, result)
    med = {
        name: {k: statistics.median(x[k] for x in rows) for k in rows[0]}
        for name, rows in runs.items()
    }
    table = Table(
        title=f"{args.agents} ReAct agent episodes (notes env), model latency {args.model_latency}s per generate"
    )
    for col in (
        "case",
        "policy calls/s (turn phase)",
        "mean batch",
        "turn phase s",
        "wall s (with agent start)",
    ):
        table.add_column(col)
    for name, m in med.items():
        table.add_row(
            f"{args.agents} agents {'at once' if name == 'concurrent' else 'one after another'}",
            f"{m['calls_per_s']:.1f}",
            f"{m['mean_batch']:.1f}",
            f"{m['turn_s']:.2f}",
            f"{m['wall_s']:.1f}",
        )
    console.print(table)
    ratio = med["concurrent"]["calls_per_s"] / med["sequential"]["calls_per_s"]
    console.print(f"concurrent / sequential policy calls/s: {ratio:.1f}x (target >= 8x)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"median": med, "runs": runs, "ratio": ratio, "args": vars(args)}, f, indent=2
            )


if __name__ == "__main__":
    main()
