"""Where one env server process spends its CPU per WebSocket step, sampled with ``py-spy``.

Starts the servers of ``server_throughput.py`` (same trivial env, same settings, same core
pinning), drives each with 64 closed-loop sessions from the raw-socket load generator while
``py-spy record`` samples the server process, and prints, per server, the functions with the
largest share of the samples: *self* (the function's own code and the C calls it makes, e.g.
``orjson.loads`` or a socket ``send``, charged to the Python line that made them) and
*inclusive* (the function and everything it called). ``<event loop>`` is time in uvloop/asyncio
itself (polling, reading sockets, running callbacks) with no Python frame of ours above it.

    python benchmarks/server_profile.py                           # ours-sync, ours-plain, bare
    python benchmarks/server_profile.py --servers ours-sync --top 25 --seconds 10

``py-spy`` must be on PATH or beside this Python (``pip install py-spy``, in the ``dev`` extra),
and may need ptrace rights (root, or ``kernel.yama.ptrace_scope=0``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _bench_servers import run_loop  # noqa: E402
from _bench_wsload import throughput  # noqa: E402
from server_throughput import SERVERS, _has_taskset, start_server, wait_ready  # noqa: E402

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^():]*?)(?::(?P<line>\d+))?\)$")
#: Leaves py-spy counts as busy that are a thread waiting (our idle env workers block in a C
#: ``SimpleQueue.get``, which py-spy's idle detection does not see as idle).
_IDLE_LEAVES = frozenset({"_threads.py:ThreadRunner._work"})
_LOOP_ROOTS = ("run_until_complete", "run_forever", "_run_once", "run", "<module>", "main")


def py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not os.access(found, os.X_OK):
        raise SystemExit("py-spy not found: pip install py-spy")
    return found


def label(frame: str) -> str:
    """``func (path/to/file.py:12)`` -> ``file.py:func`` (lines merged)."""
    m = _FRAME.match(frame)
    if not m:
        return frame
    return f"{os.path.basename(m['file'])}:{m['func']}"


def summarise(raw: str) -> tuple[int, Counter[str], Counter[str]]:
    """Samples, self counts and inclusive counts per function, from py-spy's collapsed stacks."""
    total = 0
    own: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [label(f) for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        if not frames or frames[-1] in _IDLE_LEAVES:
            continue
        total += n
        leaf = frames[-1]
        if leaf.rsplit(":", 1)[-1] in _LOOP_ROOTS and "runners.py" in leaf or "uvloop" in leaf:
            leaf = "<event loop>"
        elif all(f.rsplit(":", 1)[-1] in _LOOP_ROOTS for f in frames):
            leaf = "<event loop>"
        own[leaf] += n
        for f in set(frames):
            incl[f] += n
    return total, own, incl


async def profile_one(kind: str, args: argparse.Namespace, spy: str, out_dir: str) -> str:
    server = start_server(kind, 20_000, args.loop)
    try:
        await wait_ready(server)
        # warm up first (the sync env earns inline calls after 200 quick ones), then sample
        await throughput(kind, server.port, server.proc.pid, args.sessions, 1.0, 0.2)
        raw_path = os.path.join(out_dir, f"{kind}.txt")
        cmd = [spy, "record", "--pid", str(server.proc.pid), "--rate", str(args.rate)]
        cmd += ["--duration", str(int(args.seconds)), "--format", "raw", "--output", raw_path]
        spy_proc = await asyncio.create_subprocess_exec(
            *cmd, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        await asyncio.sleep(0.5)  # py-spy attaches
        pt = await throughput(
            kind, server.port, server.proc.pid, args.sessions, args.seconds + 1.0, 0.0
        )
        _, err = await spy_proc.communicate()
        if spy_proc.returncode != 0 or not os.path.exists(raw_path):
            raise RuntimeError(f"py-spy failed for {kind}: {err.decode(errors='replace')[-500:]}")
        print(
            f"\n## {kind}: {SERVERS[kind]}\n"
            f"{pt.steps_per_s:,.0f} steps/s while sampled, {pt.server_cpu_us:.1f} us of server CPU per step"
        )
        return raw_path
    finally:
        server.proc.terminate()
        server.proc.wait(10)


def report(kind: str, raw_path: str, top: int) -> None:
    total, own, incl = summarise(Path(raw_path).read_text())
    print(f"{total} samples of a busy server thread\n")
    print("| self | function |  | inclusive | function |")
    print("|---:|---|---|---:|---|")
    own_rows = own.most_common(top)
    # frames every sample passes through (the process's entry point, the loop) say nothing
    incl_rows = [(f, n) for f, n in incl.most_common() if n < 0.995 * total][:top]
    for i in range(max(len(own_rows), len(incl_rows))):
        a = own_rows[i] if i < len(own_rows) else ("", 0)
        b = incl_rows[i] if i < len(incl_rows) else ("", 0)
        cell_a = f"{100 * a[1] / total:.1f}%" if a[0] else ""
        cell_b = f"{100 * b[1] / total:.1f}%" if b[0] else ""
        print(f"| {cell_a} | `{a[0]}` |  | {cell_b} | `{b[0]}` |")


async def run(args: argparse.Namespace) -> None:
    spy = py_spy()
    print(
        f"servers on core 0 ({'taskset' if _has_taskset() else 'NO taskset'}); "
        f"{args.sessions} sessions; py-spy at {args.rate} Hz for {args.seconds:g} s each"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.servers:
            path = await profile_one(kind, args, spy, args.keep or tmp)
            report(kind, path, args.top)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--servers", nargs="+", choices=list(SERVERS), default=["ours-sync", "ours-plain", "bare"]
    )
    p.add_argument("--sessions", type=int, default=64)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--rate", type=int, default=500, help="py-spy samples per second")
    p.add_argument("--top", type=int, default=15, help="functions listed per server")
    p.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto")
    p.add_argument("--keep", help="a folder to keep py-spy's raw collapsed stacks in")
    args = p.parse_args(argv)
    if _has_taskset():
        os.sched_setaffinity(0, {1})
    run_loop(lambda: run(args), args.loop)


if __name__ == "__main__":
    main()
