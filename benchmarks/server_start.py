"""What starting a local env server costs: forked from the owner's zygote vs a fresh interpreter.

Each round starts ``--servers`` servers of ``--app`` with ``start_local_servers`` both ways
(``OPENENV_TRAIN_FORK_SERVERS=0`` is the anchor, the way every server started before the zygote),
in alternating order, and reads each server's own CPU seconds once it answers ``/health``. The
zygote's one-time imports are shown apart (paid once per owner process). Prints medians over
``--rounds`` rounds and the ratios against the anchor.

Usage: python benchmarks/server_start.py [--app blackjack_env.server.app:app] [--servers 4]
       [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from openenv_train.runtime import start_local_servers  # noqa: E402


def cpu_seconds(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def one_round(app: str, n: int, forked: bool) -> tuple[float, float]:
    """(wall seconds to start ``n`` servers, median CPU seconds of one server's start)."""
    os.environ["OPENENV_TRAIN_FORK_SERVERS"] = "1" if forked else "0"
    started = time.perf_counter()
    with start_local_servers(app, n) as group:
        wall = time.perf_counter() - started
        cpu = statistics.median(cpu_seconds(p.pid) for p in group)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--app", default="blackjack_env.server.app:app")
    parser.add_argument("--servers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    one_round(args.app, 1, forked=True)  # the zygote's start, measured below, is not a round's
    zygote = next(
        c for c in psutil.Process().children() if "openenv_train.runtime.zygote" in c.cmdline()
    )
    results: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for r in range(args.rounds):
        for forked in (True, False) if r % 2 == 0 else (False, True):  # interleaved
            results[forked].append(one_round(args.app, args.servers, forked))
    table = Table(title=f"starting {args.servers} x {args.app}, medians of {args.rounds} rounds")
    for col in ("way", "wall to healthy (s)", "CPU per server (s)", "CPU ratio vs fresh"):
        table.add_column(col, justify="right")
    fresh_cpu = statistics.median(c for _, c in results[False])
    for forked, name in ((False, "fresh interpreter (anchor)"), (True, "forked from the zygote")):
        wall = statistics.median(w for w, _ in results[forked])
        cpu = statistics.median(c for _, c in results[forked])
        table.add_row(name, f"{wall:.2f}", f"{cpu:.3f}", f"{cpu / fresh_cpu:.2f}x")
    Console().print(table)
    print(
        f"the zygote's own CPU (its imports, once per owner process): {cpu_seconds(zygote.pid):.2f} s"
    )


if __name__ == "__main__":
    main()
