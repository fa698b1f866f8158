"""Client and server CPU per BlackJack episode: one connection per session vs the batch extension.

The server (our BlackJack env, one process) runs on core 0, this client on core 1. Two loads,
each run with batching off (the standard protocol: one WebSocket message per request per
session) and on (``EnvClient.batch_frames``: the sessions share one connection and every
request of one loop turn leaves as one message), interleaved and repeated, medians reported:

  * ``clients``: 64 ``BlackjackEnv`` clients, each playing episodes (reset, then hit below 17,
    else stand) as fast as the server answers;
  * ``engine``: the rollout engine with a scripted basic-strategy policy (no model), 64
    concurrent episodes: the path training takes.

CPU time (user + sys, all threads) is read from the kernel for both processes, so a busy shared
machine disturbs it far less than wall time. Never asserts; prints a table with the ratios.

    python benchmarks/batch_frames.py            # ~1 minute
    python benchmarks/batch_frames.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

import psutil
from blackjack_env import BlackjackAction, BlackjackEnv
from blackjack_env.text_spec import VOCABULARY, BlackjackTextSpec, basic_strategy_answer
from rich.console import Console
from rich.table import Table

from openenv_train.policy.tiny import build_word_tokenizer
from openenv_train.rollout import RolloutConfig, RolloutEngine, ScriptedPolicy
from openenv_train.runtime import LocalProcessProvider

APP = "blackjack_env.server.app:app"


def _cpu(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


async def clients_load(url: str, batch: bool, sessions: int, episodes: int) -> int:
    clients = [BlackjackEnv(url) for _ in range(sessions)]
    for c in clients:
        c.batch_frames = batch

    async def play(c: BlackjackEnv, first_seed: int) -> None:
        for seed in range(first_seed, first_seed + episodes):
            r = await c.reset(seed=seed)
            while not r.done:
                r = await c.step(
                    BlackjackAction(action=0 if r.observation.player_total < 17 else 1)
                )

    await asyncio.gather(*(play(c, i * episodes) for i, c in enumerate(clients)))
    await asyncio.gather(*(c.close() for c in clients))
    return sessions * episodes


def engine_load(url: str, batch: bool, sessions: int, episodes: int):
    tok = build_word_tokenizer(VOCABULARY)
    policy = ScriptedPolicy(tok, basic_strategy_answer, tail_tokens=12)
    cfg = RolloutConfig(max_concurrency=sessions, max_batch_size=sessions)

    async def run() -> int:
        async with RolloutEngine(BlackjackTextSpec(seed=1), policy, [url], cfg) as engine:
            engine.pool.batch_frames = batch
            n = sessions * episodes
            out = await engine.run(["play"] * n, 8)
            return len(out.records)

    return run()


async def measure(load: str, url: str, server: psutil.Process, batch: bool, args) -> dict:
    me = psutil.Process()
    c0, s0, t0 = _cpu(me), _cpu(server), time.perf_counter()
    if load == "clients":
        n = await clients_load(url, batch, args.sessions, args.episodes)
    else:
        n = await engine_load(url, batch, args.sessions, args.episodes)
    wall = time.perf_counter() - t0
    return {
        "client_us": (_cpu(me) - c0) / n * 1e6,
        "server_us": (_cpu(server) - s0) / n * 1e6,
        "eps": n / wall,
    }


async def main(args) -> None:
    console = Console(width=max(Console().width, 120))
    if (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {1})
    with LocalProcessProvider(APP, startup_timeout=120) as provider:
        server = psutil.Process(provider.pid)
        if (os.cpu_count() or 1) >= 2:
            server.cpu_affinity([0])
        url = provider.base_url
        loads = ("clients", "engine")
        for load in loads:  # warm-up: imports, caches, the inline-call trial of the env class
            await measure(load, url, server, False, args)
            await measure(load, url, server, True, args)
        rows: dict[tuple[str, bool], list[dict]] = {}
        for rep in range(args.repeats):
            for load in loads:
                for batch in (False, True) if rep % 2 == 0 else (True, False):
                    r = await measure(load, url, server, batch, args)
                    rows.setdefault((load, batch), []).append(r)
                    console.print(
                        f"  rep {rep} {load:>7} batch={batch!s:<5} client {r['client_us']:6.0f} us/ep  "
                        f"server {r['server_us']:6.0f} us/ep  {r['eps']:7.0f} episodes/s"
                    )

    def med(load: str, batch: bool, key: str) -> float:
        return statistics.median(r[key] for r in rows[(load, batch)])

    table = Table(
        title=f"CPU per BlackJack episode, {args.sessions} sessions on one server (medians of "
        f"{args.repeats})"
    )
    for col in ("load", "frames", "client CPU us/ep", "server CPU us/ep", "episodes/s"):
        table.add_column(col, justify="right")
    for load in loads:
        for batch in (False, True):
            table.add_row(
                load,
                "batched" if batch else "one per message",
                f"{med(load, batch, 'client_us'):,.0f}",
                f"{med(load, batch, 'server_us'):,.0f}",
                f"{med(load, batch, 'eps'):,.0f}",
            )
    console.print(table)
    for load in loads:
        console.print(
            f"  {load}: batched / standard: client CPU per episode "
            f"{med(load, True, 'client_us') / med(load, False, 'client_us'):.2f}x, server "
            f"{med(load, True, 'server_us') / med(load, False, 'server_us'):.2f}x, episodes/s "
            f"{med(load, True, 'eps') / med(load, False, 'eps'):.2f}x"
        )


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=64)
    p.add_argument("--episodes", type=int, default=30, help="episodes per session per point")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    if a.quick:
        a.episodes, a.repeats = 5, 1
    asyncio.run(main(a))
