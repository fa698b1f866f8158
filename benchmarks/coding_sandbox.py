"""The coding sandbox's cost per episode: coding_env episodes/s at 4 concurrent sessions.

Two real coding_env servers on loopback, measured in the same run, interleaved: this checkout's
sandbox (grading on the server, one process under a seccomp filter) and, as the anchor, the
sandbox of an earlier commit (``--anchor-rev``; its ``envs/coding_env`` is extracted with ``git
archive`` and put first on the server's ``PYTHONPATH``). Each episode is reset + one step with a
correct solution. Prints per-round medians of episodes/s and ms per episode, and the ratio.

Usage: python benchmarks/coding_sandbox.py [--anchor-rev fd4e207] [--sessions 4] [--seconds 5]
       [--rounds 3]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coding_env import CodeAction, CodingEnv  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from openenv_train.runtime import LocalProcessProvider  # noqa: E402

APP = "coding_env.server.app:app"
SOLUTION = "def add(a, b):\n    return a + b"


def extract_env(rev: str, into: Path) -> Path:
    """``envs/coding_env`` as it was at ``rev``; the folder to put on ``PYTHONPATH``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "envs/coding_env"],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "envs" / "coding_env"


def episodes_per_second(url: str, sessions: int, seconds: float) -> float:
    """Reset + one step per episode, ``sessions`` clients in threads, for ``seconds``."""
    counts = [0] * sessions
    end = time.monotonic() + seconds

    def client(i: int) -> None:
        with CodingEnv(base_url=url, timeout=60).sync() as env:
            while time.monotonic() < end:
                env.reset(task_id="add")
                result = env.step(CodeAction(code=SOLUTION))
                assert result.reward == 1.0, result.observation.errors
                counts[i] += 1

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--anchor-rev", default="fd4e207", help="the commit whose sandbox anchors")
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    env = {"CODING_MAX_PARALLEL": str(args.sessions)}
    path = os.environ.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        old = extract_env(args.anchor_rev, Path(tmp))
        servers = {
            f"anchor ({args.anchor_rev})": LocalProcessProvider(
                APP,
                env={**env, "PYTHONPATH": os.pathsep.join(filter(None, (str(old), path)))},
                startup_timeout=120,
            ),
            "this checkout": LocalProcessProvider(APP, env=env, startup_timeout=120),
        }
        rates: dict[str, list[float]] = {name: [] for name in servers}
        try:
            for server in servers.values():
                server.start()
            for server in servers.values():  # warm-up
                episodes_per_second(server.base_url, args.sessions, 1.0)
            for _ in range(args.rounds):
                for name, server in servers.items():
                    rates[name].append(
                        episodes_per_second(server.base_url, args.sessions, args.seconds)
                    )
        finally:
            for server in servers.values():
                server.stop()
    table = Table(
        title=f"coding_env episodes/s at {args.sessions} sessions (median of {args.rounds})"
    )
    for column in ("sandbox", "episodes/s", "ms per episode", "vs anchor"):
        table.add_column(column, justify="right")
    anchor = statistics.median(next(iter(rates.values())))
    for name, values in rates.items():
        rate = statistics.median(values)
        table.add_row(name, f"{rate:.1f}", f"{1000 / rate:.0f}", f"{rate / anchor:.2f}x")
    Console().print(table)


if __name__ == "__main__":
    main()
