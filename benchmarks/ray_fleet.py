"""BlackJack episodes/s with the scripted policy: env servers on a Ray cluster vs local servers.

For each cluster size (1, 2, 4 simulated nodes on this machine, the same total logical CPUs split
evenly, started with Ray's own ``cluster_utils.Cluster``) it starts S servers on Ray (SPREAD) and
S local servers, then times, interleaved and repeated (medians):
  - local: the rollout engine on the driver against local servers (the anchor of that block),
  - Ray, engine on driver: the same engine against the Ray fleet's servers,
  - Ray, K workers: one rollout worker per node (``RayRolloutWorkers``), each on its node's servers.
The target: Ray at 1 node >= 80% of the local path. It also reports what one Ray env server costs
in memory (server process + its actor's worker process), for the sizing in the README. Writes a
PNG of the curve. Never asserts.
Usage: python benchmarks/ray_fleet.py [--nodes 1 2 4] [--servers 4] [--cpus 4] [--episodes 2048]
       [--repeats 3] [--png runs/bench/ray_fleet.png] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import psutil
import ray
from blackjack_env.text_spec import VOCABULARY, BlackjackTextSpec, basic_strategy_answer
from ray.cluster_utils import Cluster
from rich.console import Console
from rich.table import Table
from rollout_throughput import median_row, timed_run

from openenv_train.policy.tiny import build_word_tokenizer
from openenv_train.rollout import RolloutConfig, RolloutEngine, ScriptedPolicy
from openenv_train.rollout.ray_workers import RayRolloutWorkers
from openenv_train.runtime import start_local_servers
from openenv_train.runtime.ray_fleet import RayServerGroup

APP = "blackjack_env.server.app:app"
LOCAL, DRIVER, WORKERS = (
    "local servers",
    "Ray fleet, engine on driver",
    "Ray fleet, a worker per node",
)


async def timed_workers(workers: RayRolloutWorkers, n: int, group: int) -> dict[str, float]:
    started = time.perf_counter()
    batch = await workers.run(["play blackjack"] * n, group)
    wall = time.perf_counter() - started
    return {"episodes": len(batch.records), "wall_s": wall, "eps": len(batch.records) / wall}


def memory_per_server(fleet: RayServerGroup) -> dict[str, float]:
    """Median RSS (MiB) of an idle server process and of the Ray worker process that owns it."""
    server, actor = [], []
    for s in fleet.servers:
        p = psutil.Process(s.pid)
        server.append(p.memory_info().rss / 2**20)
        actor.append(p.parent().memory_info().rss / 2**20)
    return {"server_mib": statistics.median(server), "actor_mib": statistics.median(actor)}


async def block(nodes: int, args: argparse.Namespace, spec_seed: int) -> dict[str, Any]:
    """One cluster size: start it, measure the three cases interleaved, tear it down."""
    per_node = max(1, args.cpus // nodes)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": per_node})
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=per_node)
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    cluster.wait_for_nodes()
    tok = build_word_tokenizer(VOCABULARY)
    factory = functools.partial(ScriptedPolicy, tok, basic_strategy_answer, tail_tokens=12)
    cfg = RolloutConfig(max_concurrency=args.concurrency, max_batch_size=args.concurrency)
    node_ids = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
    fleet = RayServerGroup(APP, cpus_per_server=per_node * nodes / args.servers).start(args.servers)
    local = start_local_servers(APP, args.servers)
    workers = RayRolloutWorkers(
        BlackjackTextSpec(seed=spec_seed), factory, fleet, num_workers=nodes, config=cfg,
        placement=node_ids,
    )  # fmt: skip
    rows: dict[str, list[dict[str, float]]] = {LOCAL: [], DRIVER: [], WORKERS: []}
    try:
        mem = memory_per_server(fleet)
        async with (
            RolloutEngine(BlackjackTextSpec(seed=spec_seed), factory(), local.base_urls, cfg) as lo,
            RolloutEngine(BlackjackTextSpec(seed=spec_seed), factory(), fleet.base_urls, cfg) as rd,
        ):
            for run in (lambda: timed_run(lo, 256, 16), lambda: timed_run(rd, 256, 16)):
                await run()  # warm-up: connections, caches
            await timed_workers(workers, 256, 16)
            for _ in range(args.repeats):  # interleaved
                rows[LOCAL].append(await timed_run(lo, args.episodes, 16))
                rows[DRIVER].append(await timed_run(rd, args.episodes, 16))
                rows[WORKERS].append(await timed_workers(workers, args.episodes, 16))
    finally:
        await workers.aclose()
        fleet.stop()
        local.stop()
        ray.shutdown()
        cluster.shutdown()
    keep = ("episodes", "wall_s", "eps")
    out = {k: {m: median_row([{m: r[m] for m in keep} for r in v])[m] for m in keep}
           for k, v in rows.items()}  # fmt: skip
    return {"nodes": nodes, "cpus_per_node": per_node, "cases": out, "memory": mem}


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nodes = [r["nodes"] for r in results]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for case, style in ((LOCAL, "k--o"), (DRIVER, "C0-o"), (WORKERS, "C1-s")):
        ax.plot(nodes, [r["cases"][case]["eps"] for r in results], style, label=case)
    ax.set_xticks(nodes)
    ax.set_xlabel("simulated Ray nodes (same total CPUs)")
    ax.set_ylabel("BlackJack episodes/s (scripted policy)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title("Env servers on Ray vs local (local measured beside each size)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--servers", type=int, default=4)
    ap.add_argument("--cpus", type=int, default=4, help="logical CPUs of the whole cluster")
    ap.add_argument("--episodes", type=int, default=2048)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--png", default="runs/bench/ray_fleet.png")
    ap.add_argument("--json", help="also write the numbers to this file")
    args = ap.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    console = Console(width=max(Console().width, 120))
    results = []
    for n in args.nodes:
        with console.status(f"{n} node(s): starting the cluster and measuring..."):
            results.append(asyncio.run(block(n, args, spec_seed=n)))
    table = Table(
        title=f"BlackJack, scripted policy, {args.episodes} episodes x {args.repeats} "
        f"(medians), {args.servers} servers, {args.cpus} logical CPUs in all"
    )
    for col in ("nodes", "case", "episodes/s", "vs local (same block)"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for r in results:
        anchor = r["cases"][LOCAL]["eps"]
        for case, m in r["cases"].items():
            table.add_row(str(r["nodes"]), case, f"{m['eps']:,.0f}", f"{m['eps'] / anchor:.0%}")
    console.print(table)
    first = results[0]
    ratio = first["cases"][DRIVER]["eps"] / first["cases"][LOCAL]["eps"]
    targets = Table(title="Targets")
    for col in ("measure", "value", "target", "met"):
        targets.add_column(col, justify="left" if col == "measure" else "right")
    targets.add_row(
        f"Ray fleet / local at {first['nodes']} node(s)",
        f"{ratio:.0%}",
        ">= 80%",
        "yes" if ratio >= 0.8 else "NO",
    )
    mem = first["memory"]
    targets.add_row("idle env server process RSS", f"{mem['server_mib']:.0f} MiB", "-", "-")
    targets.add_row("its Ray actor worker process RSS", f"{mem['actor_mib']:.0f} MiB", "-", "-")
    console.print(targets)
    plot(results, Path(args.png))
    console.print(f"curve -> {args.png}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=2))


if __name__ == "__main__":
    main()
