"""Container runtime vs local processes, measured in one run, interleaved, medians over repeats.

  * cold start-to-ready: ``provider.start()`` until ``/health`` answers (target < 2 s for Docker);
  * warm ``EnvPool.acquire()`` p50 / p99 (a health probe of an idle server; target < 50 ms);
  * WebSocket step throughput of the echo env through a container's published loopback port vs a
    local process (target >= 80%). Each server's processes are pinned to core 0 and this load
    generator to core 1, so the comparison is one core against one core.

    python benchmarks/container_runtime.py                     # echo image built first
    python benchmarks/container_runtime.py --quick             # fewer repeats
    python benchmarks/container_runtime.py --base-image IMG    # BASE_IMAGE for the build

Numbers live here, never in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_wsload import RESET_FRAME, _frame, ws_open  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from openenv_train.runtime import ContainerProvider, EnvPool, LocalProcessProvider  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
APP = "echo_env.server.app:app"
STEP = _frame(
    json.dumps(
        {
            "type": "step",
            "data": {
                "type": "call_tool",
                "tool_name": "echo_message",
                "arguments": {"message": "hi"},
            },
        }
    ).encode()
)


def factories(image: str, engines: list[str]) -> dict[str, object]:
    out: dict[str, object] = {"local": lambda: LocalProcessProvider(APP)}
    for engine in engines:
        out[engine] = lambda engine=engine: ContainerProvider(image, engine=engine, app=APP)
    return out


def server_pids(provider: object) -> list[int]:
    if isinstance(provider, LocalProcessProvider):
        return [provider.pid]
    api = provider._client.api  # type: ignore[attr-defined]
    return [int(api.inspect_container(provider.name)["State"]["Pid"])]  # type: ignore[attr-defined]


def pin(pids: list[int], core: int) -> None:
    for pid in pids:
        for task in os.listdir(f"/proc/{pid}/task"):
            os.sched_setaffinity(int(task), {core})


async def steps_per_s(port: int, sessions: int, seconds: float) -> float:
    conns = [await ws_open(port) for _ in range(sessions)]
    for ws in conns:
        await ws.send(RESET_FRAME)
    count, t_end = 0, time.perf_counter() + seconds

    async def worker(ws) -> None:
        nonlocal count
        while time.perf_counter() < t_end:
            reply = await ws.send(STEP)
            if b'"observation"' not in reply[:40]:
                raise RuntimeError(f"step failed: {reply[:200]!r}")
            count += 1

    await asyncio.gather(*(worker(ws) for ws in conns))
    for ws in conns:
        ws.transport.close()
    return count / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--engines", default="docker,podman")
    ap.add_argument("--image", default="openenv-train-bench/echo_env:latest")
    ap.add_argument("--base-image", default="openenv-train-base:py3.11-bookworm")
    args = ap.parse_args()
    engines = [e for e in args.engines.split(",") if e]
    repeats, acquires, seconds = (3, 100, 2.0) if args.quick else (7, 400, 5.0)
    console = Console(width=150)
    from openenv_train.cli.env_build import build_image

    for engine in engines:
        with console.status(f"building {args.image} on {engine}"):
            build_image(
                ROOT / "envs" / "echo_env", args.image, base_image=args.base_image, engine=engine
            )
    make = factories(args.image, engines)
    os.sched_setaffinity(0, {1})

    cold: dict[str, list[float]] = {k: [] for k in make}
    for _ in range(repeats):  # interleaved
        for name, factory in make.items():
            p = factory()
            t0 = time.perf_counter()
            p.start()
            cold[name].append(time.perf_counter() - t0)
            p.stop()

    acquire: dict[str, list[float]] = {}
    tput: dict[str, list[float]] = {k: [] for k in make}
    pools = {name: EnvPool(factory, min_size=1).start() for name, factory in make.items()}
    try:
        for name, pool in pools.items():
            lat = []
            for _ in range(acquires):
                t0 = time.perf_counter()
                lease = pool.acquire()
                lat.append(time.perf_counter() - t0)
                lease.release()
                while pool.stats()["idle"] == 0:  # the monitor returns it after a health probe
                    time.sleep(0.005)
            acquire[name] = sorted(lat)
        for _ in range(repeats):
            for name, pool in pools.items():
                with pool.acquire() as lease:
                    pin(server_pids(lease.provider), 0)
                    port = int(lease.base_url.rsplit(":", 1)[1])
                    tput[name].append(asyncio.run(steps_per_s(port, 64, seconds)))
    finally:
        for pool in pools.values():
            pool.close()

    t = Table(title=f"container runtime vs local process ({repeats} repeats, medians)")
    for col in ("runtime", "cold start-to-ready", "vs local", "acquire p50", "acquire p99",
                "WS steps/s (64 sessions)", "vs local"):  # fmt: skip
        t.add_column(col, justify="right")
    c0, s0 = statistics.median(cold["local"]), statistics.median(tput["local"])
    for name in make:
        c, s, lat = statistics.median(cold[name]), statistics.median(tput[name]), acquire[name]
        t.add_row(
            name,
            f"{c:.2f} s",
            f"{c / c0:.2f}x",
            f"{lat[len(lat) // 2] * 1e3:.2f} ms",
            f"{lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e3:.2f} ms",
            f"{s:,.0f}",
            f"{s / s0:.0%}",
        )
    console.print(t)


if __name__ == "__main__":
    main()
