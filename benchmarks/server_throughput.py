"""WebSocket step throughput of one env server process: ours vs OpenEnv 0.10 vs bare ``websockets``.

Each server runs alone on core 0 (``taskset -c 0``); this load generator runs on core 1. The
env is trivial (reset -> count 0, step -> count + delta), written once with our API (as async
methods, and as plain sync methods that our server runs in worker threads) and once with
OpenEnv's API (sync, its usual idiom; and async via ``reset_async``/``step_async``). The bare
server is a ``websockets`` echo handler: the ceiling for a Python server on this machine.

The load generator (``_bench_wsload.py``) speaks raw RFC 6455 over asyncio protocols with
pre-built frames, so it costs a few microseconds per request and measures the server, not
itself; its own CPU use is printed so a saturated generator would show. The servers live in
``_bench_servers.py``. Besides wall-clock steps/s, each point records the server process's CPU
time per step: on a shared machine that is far steadier than wall-clock throughput.

Measured, interleaved across servers and repeated (medians reported):
  * steps/s and p50/p99 latency at 1, 64 and 512 concurrent sessions (closed loop: each session
    sends its next step as soon as its reply lands);
  * a 10,000-session run: every session connects, resets, steps 3 times and stays open until all
    10,000 are open at once (handshakes bounded to --open-concurrency in flight), then closes;
    success rate and server RSS per session.

    python benchmarks/server_throughput.py            # full run (~8 minutes)
    python benchmarks/server_throughput.py --quick    # smoke run (~40 s)
    python benchmarks/server_throughput.py --observe  # /metrics scraped, tracing on/off vs anchors

Timing numbers live here, never in tests; they are noisy on a shared machine, so read the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the _bench_* helpers beside us
from _bench_servers import counter_cost, event_loop, run_loop, serve  # noqa: E402
from _bench_wsload import (  # noqa: E402
    RESET_FRAME,
    Point,
    SessionRun,
    many_sessions,
    reply_ok,
    throughput,
    ws_close,
    ws_open,
)

SERVERS = {
    "ours": "openenv-train, async env",
    "ours-sync": "openenv-train, sync env (default settings: worker threads, then inline once quick)",
    "ours-plain": "openenv-train, sync env, a plain `uvicorn app` launch (uvicorn's defaults)",
    "openenv": "OpenEnv 0.10, sync env (its idiom)",
    "openenv-async": "OpenEnv 0.10, async env",
    "bare": "bare websockets echo (ceiling)",
    "ours-nometrics": "openenv-train, async env, the /metrics counters taken off (anchor of the next two)",
    "ours-scraped": "openenv-train, async env, /metrics scraped every --scrape-every s during each point",
    "ours-traced": "openenv-train, async env, OpenTelemetry on: a span per reset/step, exported to nowhere",
}
#: the observability rows: run only when asked (--servers ... or --observe)
OBSERVE = ("ours", "ours-nometrics", "ours-scraped", "ours-traced")


@dataclass
class Server:
    kind: str
    port: int
    proc: subprocess.Popen


def start_server(kind: str, max_sessions: int, loop: str) -> Server:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)
    port = sock.getsockname()[1]
    cmd = [sys.executable, os.path.abspath(__file__), "--serve", kind, "--fd", str(sock.fileno())]
    cmd += ["--max-sessions", str(max_sessions), "--loop", loop]
    if _has_taskset():
        cmd = ["taskset", "-c", "0", *cmd]
    proc = subprocess.Popen(cmd, pass_fds=(sock.fileno(),), preexec_fn=_die_with_parent)
    sock.close()
    return Server(kind, port, proc)


def _die_with_parent() -> None:
    """In the child, before exec: the kernel SIGKILLs it if this benchmark dies (no orphans)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass  # not Linux: the finally block in run() still stops the servers


def _has_taskset() -> bool:
    from shutil import which

    return which("taskset") is not None and (os.cpu_count() or 1) >= 2


async def wait_ready(server: Server, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if server.proc.poll() is not None:
            raise RuntimeError(f"{server.kind} server exited with {server.proc.returncode}")
        try:
            ws = await ws_open(server.port, timeout=5)
            reply = await asyncio.wait_for(ws.send(RESET_FRAME), 5)
            await ws_close(server.kind, ws, timeout=5)
            if reply_ok(server.kind, reply):
                return
            raise RuntimeError(f"{server.kind} server answered reset with {reply[:200]!r}")
        except (OSError, ConnectionError, asyncio.TimeoutError):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{server.kind} server not ready after {timeout} s") from None
            await asyncio.sleep(0.2)


async def run(args: argparse.Namespace) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 150))
    kinds = args.servers
    servers = {k: start_server(k, args.max_sessions, args.loop) for k in kinds}
    try:
        await asyncio.gather(*(wait_ready(s) for s in servers.values()))
        console.print(
            f"servers on core 0 ({'taskset' if _has_taskset() else 'NO taskset'}), load generator on "
            f"core {sorted(os.sched_getaffinity(0))}; {args.repeats} repeats x {args.seconds} s per point; "
            f"event loop {event_loop(args.loop)} everywhere"
        )
        # the held-open run goes first, on fresh servers, so RSS growth is all per-session cost
        runs: dict[str, SessionRun] = {}
        for kind in kinds if args.sessions else []:
            s = servers[kind]
            runs[kind] = r = await many_sessions(
                kind, s.port, s.proc.pid, args.sessions, args.open_concurrency
            )
            console.print(
                f"  {kind:>13} {args.sessions} sessions: {r.ok}/{r.total} ok, peak open {r.peak_open}, "
                f"opened in {r.open_s:.1f} s, {r.rss_per_session_kb:.1f} KiB/session"
                + (f", failures {r.failures}" if r.failures else "")
            )
        points: dict[tuple[str, int], list[Point]] = {}
        for rep in range(args.repeats):
            for level in args.levels:
                # rotate who goes first, so no server always runs right after a busy neighbour
                order = kinds[rep % len(kinds) :] + kinds[: rep % len(kinds)]
                for kind in order:
                    srv = servers[kind]
                    during = (
                        functools.partial(scrape_every, srv.port, args.scrape_every)
                        if kind == "ours-scraped"
                        else None
                    )
                    pt = await throughput(
                        kind, srv.port, srv.proc.pid, level, args.seconds, args.warmup, during
                    )
                    points.setdefault((kind, level), []).append(pt)
                    console.print(
                        f"  rep {rep} {kind:>13} x{level:<4} {pt.steps_per_s:9.0f} steps/s  "
                        f"p50 {pt.p50_ms:6.2f} ms  p99 {pt.p99_ms:7.2f} ms  server {pt.server_cpu_us:5.1f} us/step  "
                        f"loadgen cpu {pt.loadgen_cpu:4.0%}"
                        + (f"  ERRORS {pt.errors}" if pt.errors else "")
                    )
    finally:
        for s in servers.values():
            s.proc.terminate()
        for s in servers.values():
            try:
                s.proc.wait(10)
            except subprocess.TimeoutExpired:
                s.proc.kill()
                s.proc.wait()

    def med(kind: str, level: int, attr: str) -> float:
        return statistics.median(getattr(p, attr) for p in points[(kind, level)])

    table = Table(title="WS steps/s of one server process on one core (medians of repeats)")
    cols = ("sessions", "server", "steps/s", "p50 ms", "p99 ms", "CPU us/step", "core busy")
    cols += ("1 core: steps/s",)
    for col in cols:
        table.add_column(col, justify="right")
    for level in args.levels:
        for i, k in enumerate(kinds):
            table.add_row(
                str(level) if i == 0 else "",
                k,
                f"{med(k, level, 'steps_per_s'):,.0f}",
                f"{med(k, level, 'p50_ms'):.2f}",
                f"{med(k, level, 'p99_ms'):.1f}",
                f"{med(k, level, 'server_cpu_us'):.0f}",
                f"{med(k, level, 'steps_per_s') * med(k, level, 'server_cpu_us') / 1e4:.0f}%",
                f"{1e6 / med(k, level, 'server_cpu_us'):,.0f}",
                end_section=i == len(kinds) - 1,
            )
    console.print(table)
    for kind, desc in SERVERS.items():
        if kind in kinds:
            console.print(f"  {kind}: {desc}")
    console.print(
        "  CPU us/step: the server process's user+sys CPU time (all threads) per step; core busy = "
        "steps/s x that (below ~90%, the server waited on something else: a shared core, the "
        "client); '1 core: steps/s' = 1e6 / CPU us/step, what it would do with a core to itself."
    )

    pairs = [
        ("ours", "ours-nometrics"),
        ("ours-scraped", "ours-nometrics"),
        ("ours-traced", "ours"),
        ("ours", "openenv-async"),
        ("ours-sync", "openenv"),
        ("ours-plain", "openenv"),
        ("ours", "openenv"),
        ("ours", "bare"),
        ("ours-sync", "bare"),
        ("ours-plain", "bare"),
    ]
    pairs = [(a, b) for a, b in pairs if a in kinds and b in kinds]
    if pairs:
        t3 = Table(
            title="Ratios: wall-clock steps/s (and server CPU per step, which a busy shared core "
            "disturbs far less)"
        )
        t3.add_column("sessions", justify="right")
        for a, b in pairs:
            t3.add_column(f"{a} / {b}", justify="right")
        for level in args.levels:
            t3.add_row(
                str(level),
                *(
                    f"{med(a, level, 'steps_per_s') / med(b, level, 'steps_per_s'):.2f}x "
                    f"({med(b, level, 'server_cpu_us') / med(a, level, 'server_cpu_us'):.2f}x)"
                    for a, b in pairs
                ),
            )
        console.print(t3)
    if "ours" in kinds and "ours-nometrics" in kinds:
        t4 = Table(
            title="The /metrics counters' own cost, measured in-process (frame() with and without "
            "them, interleaved), as a share of ours' server CPU per step above"
        )
        for col in ("sessions", "frame() us", "without us", "counters us", "share of a step"):
            t4.add_column(col, justify="right")
        t4.add_column(f"a scrape / {args.scrape_every:g} s", justify="right")
        for level in args.levels:
            cost = await counter_cost(level)
            extra = cost["with_us"] - cost["without_us"]
            step_us = med("ours", level, "server_cpu_us")
            steps = med("ours", level, "steps_per_s") * args.scrape_every
            t4.add_row(
                str(level),
                f"{cost['with_us']:.2f}",
                f"{cost['without_us']:.2f}",
                f"{extra:.2f}",
                f"{100 * extra / step_us:.1f}%",
                f"{cost['scrape_ms']:.2f} ms = {100 * cost['scrape_ms'] * 1e3 / (steps * step_us):.2f}%",
            )
        console.print(t4)
    if runs:
        t2 = Table(
            title=f"{args.sessions:,} sessions held open at once (connect, reset, 3 steps, close)"
        )
        for col in ("server", "success", "peak open", "open time s", "server RSS / session"):
            t2.add_column(col, justify="right")
        for kind, r in runs.items():
            t2.add_row(
                kind,
                f"{100 * r.ok / r.total:.2f}%",
                f"{r.peak_open:,}",
                f"{r.open_s:.1f}",
                f"{r.rss_per_session_kb:.1f} KiB",
            )
        console.print(t2)


async def scrape_every(port: int, seconds: float) -> None:
    """GET /metrics every ``seconds`` from the measured window's start (as Prometheus would),
    reading the whole reply; its client cost is the load generator's, the server's shows in CPU
    per step. A point shorter than ``seconds`` is scraped once: more often than the cadence."""
    while True:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        await reader.read()  # until the server closes
        writer.close()
        await asyncio.sleep(seconds)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--quick", action="store_true", help="short smoke run: 1 repeat, 1 s points, 1,000 sessions"
    )
    p.add_argument(
        "--servers",
        nargs="+",
        choices=list(SERVERS),
        default=[k for k in SERVERS if k != "ours-plain" and k not in OBSERVE[1:]],
    )
    p.add_argument(
        "--levels", nargs="+", type=int, default=[1, 64, 512], help="concurrent sessions"
    )
    p.add_argument(
        "--observe",
        action="store_true",
        help="the observability rows: ours with and without the /metrics counters, scraped, traced",
    )
    p.add_argument(
        "--scrape-every", type=float, default=5.0, help="seconds between /metrics scrapes"
    )
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seconds", type=float, default=2.0, help="measured seconds per point")
    p.add_argument("--warmup", type=float, default=0.3)
    p.add_argument(
        "--sessions", type=int, default=10_000, help="sessions in the held-open run (0: skip)"
    )
    p.add_argument("--open-concurrency", type=int, default=512, help="handshakes in flight at once")
    p.add_argument("--max-sessions", type=int, default=20_000, help="server capacity setting")
    p.add_argument(
        "--loop",
        choices=("auto", "asyncio", "uvloop"),
        default="auto",
        help="event loop for every server and the load generator (auto: uvloop if installed)",
    )
    p.add_argument("--serve", help=argparse.SUPPRESS)
    p.add_argument("--fd", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        serve(args.serve, args.fd, args.max_sessions, args.loop)
        return
    if args.observe:
        args.servers = list(OBSERVE)
        args.seconds = max(args.seconds, args.scrape_every)  # each point holds one scrape
    if args.quick:
        args.repeats, args.seconds, args.warmup = 1, 1.0, 0.2
        args.sessions = min(args.sessions, 1000)
    if _has_taskset():
        os.sched_setaffinity(0, {1})
    run_loop(lambda: run(args), args.loop)


if __name__ == "__main__":
    main()
