"""BlackJack episodes/s through real local env servers, batched rollouts vs one after another.

(a) scripted policy (basic strategy read from the prompt, no model): the engine's own overhead,
    target >= 1,000 episodes/s on the 2-core dev machine;
(b) the tiny transformers policy (85k-parameter Llama after a 2 s format warm-up, sampling at
    temperature 1, one torch thread): 64 concurrent episodes with every model call batched vs the
    the same 64 deals (seeded) one after another on one reused session (a strict baseline), and
    one after another with a new session per episode (what OpenEnv 0.10's
    build_harness_rollout_func does: the target, >= 10x, is against this one).
Medians over interleaved repeats (timings here are noisy); never asserts.
Usage: python benchmarks/rollout_throughput.py [--quick] [--servers 2] [--episodes 2048]
       [--concurrency 128] [--tiny-episodes 64] [--tiny-rounds 4] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from blackjack_env.text_spec import (
    VOCABULARY,
    BlackjackTextSpec,
    basic_strategy_answer,
    random_episode,
)
from rich.console import Console
from rich.table import Table

from openenv_train.policy.tiny import build_tiny_llama, build_word_tokenizer
from openenv_train.rollout import RolloutConfig, RolloutEngine, ScriptedPolicy
from openenv_train.runtime import start_local_servers

APP = "blackjack_env.server.app:app"
OPENENV_STYLE = "tiny model, one after another, a session each (OpenEnv)"


def warmed_up_model(tokenizer: Any) -> Any:
    """The tiny Llama taught the answer format on random-action games (not a policy)."""
    from openenv_train.training import quick_format_warmup

    model = build_tiny_llama(tokenizer, seed=7)
    quick_format_warmup(model, tokenizer, random_episode)
    return model


async def timed_run(engine: RolloutEngine, n: int, group: int) -> dict[str, float]:
    started = time.perf_counter()
    batch = await engine.run(["play blackjack"] * n, group)
    wall = time.perf_counter() - started
    return {
        "episodes": len(batch.records),
        "wall_s": wall,
        "eps": len(batch.records) / wall,
        "calls": batch.metrics["policy_calls"],
        "batch": batch.metrics["mean_batch_size"],
        "turns": batch.metrics.get("turns_mean", 0.0),
        "reward": batch.metrics.get("reward_mean", 0.0),
        "dropped": batch.metrics["groups_dropped"],
    }


async def new_session_each(policy: Any, urls: list[str], cfg: RolloutConfig, n: int, seed: int):
    """OpenEnv 0.10's ``build_harness_rollout_func``: one prompt after another, each episode in a
    session of its own (connect, reset, steps, close). Timed end to end, the closes included."""
    started = time.perf_counter()
    rows = []
    for i in range(n):
        async with RolloutEngine(BlackjackTextSpec(seed=seed + i), policy, urls, cfg) as engine:
            rows.append(await timed_run(engine, 1, 1))
    total = sum_rows(rows)
    total["wall_s"] = time.perf_counter() - started
    total["eps"] = total["episodes"] / total["wall_s"]
    return total


def sum_rows(rows: list[dict[str, float]]) -> dict[str, float]:
    """Consecutive runs as one: totals, rates and means recomputed."""
    out = {k: sum(r[k] for r in rows) for k in ("episodes", "wall_s", "calls", "dropped")}
    out["eps"] = out["episodes"] / out["wall_s"]
    out["batch"] = (
        sum(r["batch"] * r["calls"] for r in rows) / out["calls"] if out["calls"] else 0.0
    )
    for k in ("turns", "reward"):
        out[k] = sum(r[k] * r["episodes"] for r in rows) / out["episodes"]
    return out


def median_row(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


async def bench(urls: list[str], args: argparse.Namespace) -> dict[str, dict[str, float]]:
    tok = build_word_tokenizer(VOCABULARY)
    results: dict[str, dict[str, float]] = {}

    scripted = ScriptedPolicy(tok, basic_strategy_answer, tail_tokens=12)
    cfg = RolloutConfig(max_concurrency=args.concurrency, max_batch_size=args.concurrency)
    seq_cfg = RolloutConfig(max_concurrency=1)
    async with (
        RolloutEngine(BlackjackTextSpec(seed=1), scripted, urls, cfg) as fast,
        RolloutEngine(BlackjackTextSpec(seed=1), scripted, urls, seq_cfg) as slow,
    ):
        await timed_run(fast, 256, 16)  # warm-up: connections, caches
        await timed_run(slow, 16, 16)
        many, one = [], []
        for _ in range(args.repeats):  # interleaved
            many.append(await timed_run(fast, args.episodes, 16))
            one.append(await timed_run(slow, args.seq_episodes, 16))
        results["scripted, batched"] = median_row(many) | {"concurrency": args.concurrency}
        results["scripted, one after another"] = median_row(one) | {"concurrency": 1}

    if not args.no_model:
        import torch

        from openenv_train.policy import TransformersPolicy

        torch.set_num_threads(1)  # the env servers need the other core
        model = warmed_up_model(tok)
        policy = TransformersPolicy(model, tok)
        n = args.tiny_episodes
        sampled = dict(max_new_tokens=4, temperature=1.0)
        batched_cfg = RolloutConfig(max_concurrency=n, max_batch_size=n, max_wait_s=0.05, **sampled)
        async with (
            RolloutEngine(BlackjackTextSpec(seed=2), policy, urls, batched_cfg) as fast,
            RolloutEngine(
                BlackjackTextSpec(seed=2), policy, urls, RolloutConfig(max_concurrency=1, **sampled)
            ) as slow,
        ):
            await timed_run(fast, n, 8)
            await timed_run(slow, 8, 8)
            seq_cfg = RolloutConfig(max_concurrency=1, **sampled)
            many, one, fresh = [], [], []
            for _ in range(args.repeats):
                # a batched round of 64 takes ~50 ms: time several rounds so noise averages out
                rounds = [await timed_run(fast, n, 8) for _ in range(args.tiny_rounds)]
                many.append(sum_rows(rounds))
                one.append(await timed_run(slow, n, 8))
                fresh.append(await new_session_each(policy, urls, seq_cfg, n, seed=2))
            results["tiny model, batched"] = median_row(many) | {"concurrency": n}
            results["tiny model, one after another"] = median_row(one) | {"concurrency": 1}
            results[OPENENV_STYLE] = median_row(fresh) | {"concurrency": 1}
        await policy.aclose()
    return results


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="small sizes, 1 repeat (a smoke run)")
    ap.add_argument("--servers", type=int, default=2)
    ap.add_argument("--episodes", type=int, default=2048)
    ap.add_argument("--seq-episodes", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--tiny-episodes", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--tiny-rounds", type=int, default=4, help="batched rounds of --tiny-episodes per repeat"
    )
    ap.add_argument("--no-model", action="store_true", help="skip the transformers part")
    ap.add_argument("--json", help="also write the numbers to this file")
    args = ap.parse_args()
    if args.quick:
        args.episodes, args.seq_episodes, args.repeats = 512, 64, 1
    console = Console(width=max(Console().width, 132))
    with console.status(f"starting {args.servers} BlackJack servers..."):
        servers = start_local_servers(APP, args.servers)
    try:
        results = asyncio.run(bench(servers.base_urls, args))
    finally:
        servers.stop()

    table = Table(
        title=f"BlackJack rollouts through {args.servers} local env servers (medians of {args.repeats})"
    )
    for col in (
        "case",
        "episodes",
        "concurrency",
        "wall s",
        "episodes/s",
        "policy calls",
        "mean batch",
        "turns",
        "reward",
    ):
        table.add_column(col, justify="left" if col == "case" else "right")
    for name, r in results.items():
        table.add_row(
            name,
            f"{r['episodes']:.0f}",
            f"{r['concurrency']:.0f}",
            f"{r['wall_s']:.3f}",
            f"{r['eps']:,.0f}",
            f"{r['calls']:.0f}",
            f"{r['batch']:.1f}",
            f"{r['turns']:.2f}",
            f"{r['reward']:+.3f}",
        )
    console.print(table)
    ratios = Table(title="Targets")
    for col in ("measure", "value", "target", "met"):
        ratios.add_column(col, justify="left" if col == "measure" else "right")
    eps = results["scripted, batched"]["eps"]
    ratios.add_row(
        "scripted episodes/s (engine overhead)",
        f"{eps:,.0f}",
        ">= 1,000",
        "yes" if eps >= 1000 else "NO",
    )
    r = eps / results["scripted, one after another"]["eps"]
    ratios.add_row("scripted: batched / one after another", f"{r:.1f}x", "-", "-")
    if "tiny model, batched" in results:
        r = results["tiny model, batched"]["eps"] / results["tiny model, one after another"]["eps"]
        ratios.add_row(
            f"tiny model: {args.tiny_episodes} batched / one after another, reused session",
            f"{r:.1f}x",
            "-",
            "-",
        )
        r = results["tiny model, batched"]["eps"] / results[OPENENV_STYLE]["eps"]
        ratios.add_row(
            f"tiny model: {args.tiny_episodes} batched / one after another, a session each "
            "(what OpenEnv's harness does)",
            f"{r:.1f}x",
            ">= 10x",
            "yes" if r >= 10 else "NO",
        )
    console.print(ratios)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"args": vars(args), "results": results}, fh, indent=2)


if __name__ == "__main__":
    main()
