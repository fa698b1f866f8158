"""100,000 concurrent env sessions on one machine: connect, reset, 3 steps, all held open at once.

What it takes, and why each part is here:

* **several server processes**: a process may hold only as many sockets as its open-file limit
  (``ulimit -n``; the hard limit is 20,000 on the dev machine and only a privileged process
  raises it), so ``--servers`` processes of our server (a trivial env, default settings)
  each hold a share, each listening on its own loopback address 127.0.0.(10+i);
* **several load-generator processes**, for the same limit on the client side; each binds its
  sockets to its own source address 127.0.1.(1+j), so no source address runs out of the ~28,000
  ephemeral ports (``net.ipv4.ip_local_port_range``);
* each generator opens sessions through an **adaptive window** (``OpenWindow``): it grows while
  handshakes finish within ``--handshake-target-s`` and halves when one takes longer, so however
  loaded the machine, the servers are never asked to hold more pending handshakes than they
  complete well inside their own request-head deadline (10 s); progress and the opening rate go
  to stderr every 10 s;
* every session connects, resets, steps 3 times and stays open until every session of every
  generator is open; then all close. A session counts as a success when all 4 replies were
  right and it was open at the moment all were.

Reported: success rate, p50/p99 latency of the requests (reset and steps) and of the handshakes,
the time to open all, server RSS per session (the servers' resident memory growth over the
sessions held) and the generators' too. The load generator is the raw-socket one of
``server_throughput.py`` (``_bench_wsload.py``). Never asserts.

    python benchmarks/many_sessions.py                      # 100,000 sessions (minutes; ~4 GB)
    python benchmarks/many_sessions.py --sessions 4000      # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import math
import os
import resource
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the _bench_* helpers beside us
from _bench_servers import serve  # noqa: E402
from _bench_wsload import RESET_FRAME, STEP_FRAME, RawWS, reply_ok, ws_close  # noqa: E402
from server_throughput import _die_with_parent  # noqa: E402

PORT = 18000


def server_ip(i: int) -> str:
    return f"127.0.0.{10 + i}"


def client_ip(j: int) -> str:
    return f"127.0.1.{1 + j}"


# ---- one load-generator process --------------------------------------------------------------


class OpenWindow:
    """How many sessions a generator opens at once (AIMD on the handshake latency, with a floor).

    A fixed window is either too small for an idle machine or too large for a loaded one: past
    what the servers complete in time, more in flight only queues handshakes towards their
    deadline. This one grows by one per window of handshakes faster than ``target_s`` and halves
    (at most once per ``target_s``, never below ``least``) when one is slower. The floor matters on
    a starved machine: there every handshake is slow however few are in flight, and a window of
    one would only stop the servers' work.
    """

    def __init__(self, start: int, least: int, most: int, target_s: float) -> None:
        self.size = float(start)
        self.least = least
        self.most = most
        self.target_s = target_s
        self.in_flight = 0
        self.peak = start
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._last_cut = 0.0

    async def enter(self) -> None:
        if self.in_flight >= int(self.size) or self._waiters:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            await fut  # leave() counted us in
        else:
            self.in_flight += 1

    def leave(self, latency_s: float | None) -> None:
        """One opening ended; ``latency_s`` is its handshake time (None: it failed)."""
        now = time.monotonic()
        if latency_s is None or latency_s > self.target_s:
            if now - self._last_cut > self.target_s:
                self.size = max(float(self.least), self.size / 2)
                self._last_cut = now
        else:
            self.size = min(float(self.most), self.size + 1 / self.size)
        self.peak = max(self.peak, int(self.size))
        self.in_flight -= 1
        while self._waiters and self.in_flight < int(self.size):
            self.in_flight += 1
            self._waiters.popleft().set_result(None)


async def generator(
    index: int, n: int, targets: list[str], concurrency: int, target_s: float
) -> None:
    """Open ``n`` sessions spread over ``targets``; report; hold; close on 'close' from stdin."""
    loop = asyncio.get_running_loop()
    src = client_ip(index)
    window = OpenWindow(min(16, concurrency), min(8, concurrency), concurrency, target_s)
    all_open = asyncio.Event()
    lat: list[float] = []
    shake: list[float] = []
    failures: dict[str, int] = {}
    conns: list[RawWS] = []
    clock = time.perf_counter

    async def session(k: int) -> None:
        host = targets[k % len(targets)]
        await window.enter()
        handshake_s: float | None = None
        try:
            try:
                t0 = clock()
                _, ws = await asyncio.wait_for(
                    loop.create_connection(
                        lambda: RawWS(f"{host}:{PORT}"), host, PORT, local_addr=(src, 0)
                    ),
                    120,
                )
                ws.waiter = fut = loop.create_future()
                if ws.open:
                    fut.set_result(b"")
                await asyncio.wait_for(fut, 120)
                handshake_s = clock() - t0
                shake.append(handshake_s)
                for frame in (RESET_FRAME, STEP_FRAME, STEP_FRAME, STEP_FRAME):
                    t0 = clock()
                    reply = await asyncio.wait_for(ws.send(frame), 120)
                    lat.append(clock() - t0)
                    if not reply_ok("ours", reply):
                        why = reply[:60].decode(errors="replace")
                        failures[why] = failures.get(why, 0) + 1
                        ws.transport.close()
                        return
                conns.append(ws)
            finally:
                window.leave(handshake_s)
        except Exception as exc:
            why = f"{type(exc).__name__}: {str(exc)[:60]}"
            failures[why] = failures.get(why, 0) + 1

    async def progress() -> None:
        while True:
            await asyncio.sleep(10)
            done = len(conns)
            print(
                f"  generator {index}: {done:,}/{n:,} open, {done / (clock() - t_start):,.0f}/s, "
                f"window {int(window.size)}",
                file=sys.stderr,
                flush=True,
            )

    t_start = clock()
    reporter = loop.create_task(progress())
    await asyncio.gather(*(session(k) for k in range(n)))
    reporter.cancel()
    open_s = clock() - t_start
    held = sum(1 for ws in conns if not ws.closed.done())
    lat.sort()
    shake.sort()

    def pct(xs: list[float], q: float) -> float:
        return xs[min(len(xs) - 1, int(len(xs) * q))] * 1e3 if xs else float("nan")

    rss = _rss_kb()
    print(
        "OPEN "
        + json.dumps(
            {
                "index": index,
                "n": n,
                "held": held,
                "open_s": open_s,
                "window_peak": window.peak,
                "failures": failures,
                "requests": len(lat),
                "req_p50_ms": pct(lat, 0.5),
                "req_p99_ms": pct(lat, 0.99),
                "shake_p50_ms": pct(shake, 0.5),
                "shake_p99_ms": pct(shake, 0.99),
                "rss_kb": rss,
            }
        ),
        flush=True,
    )
    await loop.run_in_executor(None, sys.stdin.readline)  # the parent says when all are open
    still = sum(1 for ws in conns if not ws.closed.done())
    closed = await asyncio.gather(*(ws_close("ours", ws, timeout=60) for ws in conns))
    print(
        "DONE " + json.dumps({"index": index, "still_open": still, "closed": sum(closed)}),
        flush=True,
    )
    all_open.set()


def _rss_kb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return float(line.split()[1])
    return float("nan")


# ---- the parent --------------------------------------------------------------------------------


def _raise_fd_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def _spawn_server(
    i: int, per_server: int, loop: str, idle: float, env: str
) -> tuple[subprocess.Popen, int]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((server_ip(i), PORT))
    sock.listen(4096)
    cmd = [sys.executable, os.path.abspath(__file__), "--serve", "--fd", str(sock.fileno())]
    cmd += ["--max-sessions", str(per_server), "--loop", loop, "--idle-timeout", str(idle)]
    cmd += ["--env", env]
    proc = subprocess.Popen(cmd, pass_fds=(sock.fileno(),), preexec_fn=_die_with_parent)
    sock.close()
    return proc, i


def _wait_ready(i: int, deadline: float) -> None:
    import urllib.request

    while True:
        try:
            with urllib.request.urlopen(f"http://{server_ip(i)}:{PORT}/health", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def main(args: argparse.Namespace) -> None:
    import psutil

    limit = _raise_fd_limit()
    per_proc = limit - 200  # room for the files a process keeps anyway
    servers_n = max(args.servers, math.ceil(args.sessions / per_proc))
    gens_n = max(args.generators, math.ceil(args.sessions / per_proc))
    per_server = math.ceil(args.sessions / servers_n) + 100
    print(
        f"{args.sessions:,} sessions; open-file limit {limit:,} per process -> {servers_n} servers "
        f"(capacity {per_server:,} each) and {gens_n} load generators; "
        f"up to {args.open_concurrency} sessions opening at once per generator (adaptive, handshake "
        f"target {args.handshake_target_s} s)",
        flush=True,
    )
    servers = [
        _spawn_server(i, per_server, args.loop, args.idle_timeout, args.env)
        for i in range(servers_n)
    ]
    gens: list[subprocess.Popen] = []
    try:
        deadline = time.monotonic() + 180
        for _, i in servers:
            _wait_ready(i, deadline)
        procs = [psutil.Process(p.pid) for p, _ in servers]
        rss0 = [p.memory_info().rss for p in procs]
        targets = ",".join(server_ip(i) for _, i in servers)
        shares = [
            args.sessions // gens_n + (1 if j < args.sessions % gens_n else 0)
            for j in range(gens_n)
        ]
        t0 = time.perf_counter()
        for j, n in enumerate(shares):
            cmd = [sys.executable, os.path.abspath(__file__), "--generator", str(j), "--n", str(n)]
            cmd += ["--targets", targets, "--open-concurrency", str(args.open_concurrency)]
            cmd += ["--handshake-target-s", str(args.handshake_target_s)]
            gens.append(
                subprocess.Popen(
                    cmd,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    preexec_fn=_die_with_parent,
                )
            )
        opened = []
        for g in gens:
            line = g.stdout.readline()
            if not line.startswith("OPEN "):
                raise RuntimeError(f"a load generator failed: {line!r}")
            opened.append(json.loads(line[5:]))
        open_all_s = time.perf_counter() - t0
        held = sum(o["held"] for o in opened)
        rss1 = [p.memory_info().rss for p in procs]
        for g in gens:  # every session is open at this moment: let them close
            g.stdin.write("close\n")
            g.stdin.flush()
        done = []
        for g in gens:
            line = g.stdout.readline()
            done.append(json.loads(line[5:]) if line.startswith("DONE ") else {"still_open": 0})
            g.wait(120)
        ok = min(held, sum(d["still_open"] for d in done))
    finally:
        for g in gens:
            if g.poll() is None:
                g.kill()
        for p, _ in servers:
            p.terminate()
        for p, _ in servers:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()

    failures: dict[str, int] = {}
    for o in opened:
        for k, v in o["failures"].items():
            failures[k] = failures.get(k, 0) + v
    server_kb = (sum(rss1) - sum(rss0)) / 1024 / max(held, 1)
    gen_kb = sum(o["rss_kb"] for o in opened) / max(held, 1)
    med = statistics.median
    print(
        json.dumps(
            {
                "sessions": args.sessions,
                "servers": servers_n,
                "generators": gens_n,
                "success_pct": 100.0 * ok / args.sessions,
                "held_open_at_once": held,
                "open_all_s": open_all_s,
                "open_rate_per_s": held / open_all_s if open_all_s > 0 else 0.0,
                "open_window_peak_per_generator": max(o["window_peak"] for o in opened),
                "request_p50_ms_median_of_generators": med(o["req_p50_ms"] for o in opened),
                "request_p99_ms_worst_generator": max(o["req_p99_ms"] for o in opened),
                "handshake_p50_ms_median_of_generators": med(o["shake_p50_ms"] for o in opened),
                "handshake_p99_ms_worst_generator": max(o["shake_p99_ms"] for o in opened),
                "server_rss_kb_per_session": server_kb,
                "generator_rss_kb_per_session": gen_kb,
                "failures": failures,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=100_000)
    p.add_argument("--servers", type=int, default=6, help="at least; more if the fd limit asks")
    p.add_argument("--generators", type=int, default=6, help="at least; more if the fd limit asks")
    p.add_argument(
        "--open-concurrency",
        type=int,
        default=128,
        help="most sessions opening at once, per generator",
    )
    p.add_argument(
        "--handshake-target-s",
        type=float,
        default=3.0,
        help="the opening window shrinks when a handshake takes longer (well inside the server's "
        "10 s request-head deadline)",
    )
    p.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto")
    p.add_argument(
        "--env",
        choices=("async", "sync"),
        default="async",
        help="the trivial env's methods; a sync env's quick calls run inline only while none "
        "overran, and on a starved machine every call may, moving them into worker threads",
    )
    p.add_argument(
        "--idle-timeout", type=float, default=3600.0, help="servers' session_timeout, seconds"
    )
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--fd", type=int, help=argparse.SUPPRESS)
    p.add_argument("--max-sessions", type=int, help=argparse.SUPPRESS)
    p.add_argument("--generator", type=int, help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--targets", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.serve:
        _raise_fd_limit()
        serve(
            "ours-sync" if a.env == "sync" else "ours", a.fd, a.max_sessions, a.loop, a.idle_timeout
        )
    elif a.generator is not None:
        _raise_fd_limit()
        asyncio.run(
            generator(
                a.generator, a.n, a.targets.split(","), a.open_concurrency, a.handshake_target_s
            )
        )
    else:
        main(a)
