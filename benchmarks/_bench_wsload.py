"""A raw RFC 6455 load generator for ``server_throughput.py``.

Frames are pre-built (mask key 0, so masking is the identity; no compression offered) and read
with a tiny parser on an ``asyncio.Protocol``: a request costs the generator a few microseconds,
so the measurement is of the server, not of the client library.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

STEP_TEXT = b'{"type":"step","data":{"delta":1}}'
RESET_TEXT = b'{"type":"reset","data":{}}'
CLOSE_TEXT = b'{"type":"close"}'


def _frame(payload: bytes, opcode: int = 1) -> bytes:
    """A masked client frame with mask key 0 (masking is then the identity: no per-byte work)."""
    n = len(payload)
    if n < 126:
        head = bytes((0x80 | opcode, 0x80 | n))
    elif n < 65536:
        head = bytes((0x80 | opcode, 0x80 | 126)) + n.to_bytes(2, "big")
    else:
        head = bytes((0x80 | opcode, 0x80 | 127)) + n.to_bytes(8, "big")
    return head + b"\0\0\0\0" + payload


STEP_FRAME, RESET_FRAME = _frame(STEP_TEXT), _frame(RESET_TEXT)
CLOSE_MSG_FRAME, CLOSE_CONTROL = _frame(CLOSE_TEXT), _frame((1000).to_bytes(2, "big"), opcode=8)


class RawWS(asyncio.Protocol):
    """One client WebSocket: ``await ws.send(frame)`` -> the reply's payload bytes (one at a time)."""

    def __init__(self, host: str) -> None:
        self.loop = asyncio.get_running_loop()
        self.host = host
        self.buf = bytearray()
        self.open = False
        self.waiter: asyncio.Future | None = None
        self.closed = self.loop.create_future()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        transport.write(
            b"GET /ws HTTP/1.1\r\nHost: " + self.host.encode() + b"\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            b"Sec-WebSocket-Version: 13\r\n\r\n"
        )

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        if not self.open:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            status = bytes(buf[: buf.find(b"\r\n")])
            del buf[: end + 4]
            if b" 101 " not in status:
                self._resolve(ConnectionError(status.decode(errors="replace")))
                self.transport.close()
                return
            self.open = True
            self._resolve(b"")
        while len(buf) >= 2:
            n, off = buf[1] & 0x7F, 2
            if n == 126:
                if len(buf) < 4:
                    return
                n, off = int.from_bytes(buf[2:4], "big"), 4
            elif n == 127:
                if len(buf) < 10:
                    return
                n, off = int.from_bytes(buf[2:10], "big"), 10
            if len(buf) < off + n:
                return
            opcode, payload = buf[0] & 0x0F, bytes(buf[off : off + n])
            del buf[: off + n]
            if opcode == 8:  # close: answer it, then the server drops TCP
                self.transport.write(CLOSE_CONTROL)
                self._resolve(ConnectionError("closed by server"))
                if not self.closed.done():
                    self.closed.set_result(True)
            elif opcode == 9:
                self.transport.write(_frame(payload, opcode=10))
            elif opcode in (1, 2):
                self._resolve(payload)

    def _resolve(self, value) -> None:
        w, self.waiter = self.waiter, None
        if w is not None and not w.done():
            if isinstance(value, Exception):
                w.set_exception(value)
            else:
                w.set_result(value)

    def connection_lost(self, exc) -> None:
        self._resolve(ConnectionError("connection lost"))
        if not self.closed.done():
            self.closed.set_result(False)

    def send(self, frame: bytes) -> asyncio.Future:
        self.waiter = fut = self.loop.create_future()
        self.transport.write(frame)
        return fut


async def ws_open(port: int, timeout: float = 30.0) -> RawWS:
    loop = asyncio.get_running_loop()
    _, proto = await asyncio.wait_for(
        loop.create_connection(lambda: RawWS(f"127.0.0.1:{port}"), "127.0.0.1", port), timeout
    )
    proto.waiter = fut = loop.create_future()
    if proto.open:
        fut.set_result(b"")
    await asyncio.wait_for(fut, timeout)
    return proto


def reply_ok(kind: str, reply: bytes) -> bool:
    return kind == "bare" or b'"observation"' in reply[:40]


async def ws_close(kind: str, ws: RawWS, timeout: float = 30.0) -> bool:
    """Protocol close (``{"type":"close"}``; bare: a close frame) and wait for the socket to end."""
    ws.transport.write(CLOSE_CONTROL if kind == "bare" else CLOSE_MSG_FRAME)
    try:
        return await asyncio.wait_for(asyncio.shield(ws.closed), timeout) or True
    except asyncio.TimeoutError:
        return False
    finally:
        ws.transport.close()


# ---- scenarios -----------------------------------------------------------------------------


@dataclass
class Point:
    steps_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    loadgen_cpu: float
    server_cpu_us: float  # server process CPU time (user + sys, all threads) per step


async def throughput(
    kind: str,
    port: int,
    pid: int,
    sessions: int,
    seconds: float,
    warmup: float,
    during: Callable[[], Awaitable[None]] | None = None,
) -> Point:
    """Steps of ``sessions`` closed-loop sessions for ``seconds`` after ``warmup``; ``during``,
    if given, runs over the measured window (e.g. a /metrics scraper) and is cancelled after."""
    import psutil

    server = psutil.Process(pid)
    sem = asyncio.Semaphore(256)

    async def opened() -> RawWS:
        async with sem:
            ws = await ws_open(port)
            reply = await ws.send(RESET_FRAME)
            if not reply_ok(kind, reply):
                raise RuntimeError(f"{kind}: reset failed: {reply[:200]!r}")
            return ws

    conns = await asyncio.gather(*(opened() for _ in range(sessions)))
    lat: list[float] = []
    errors = 0
    t_start = time.perf_counter() + warmup
    t_end = t_start + seconds
    clock = time.perf_counter

    async def worker(ws: RawWS) -> None:
        nonlocal errors
        while True:
            t0 = clock()
            if t0 >= t_end:
                return
            reply = await ws.send(STEP_FRAME)
            t1 = clock()
            if t0 >= t_start:
                lat.append(t1 - t0)
                if not reply_ok(kind, reply):
                    errors += 1

    marks: list[float] = []
    side: list[asyncio.Future[None]] = []

    async def mark_start() -> None:  # server CPU counted over the measured window only
        await asyncio.sleep(warmup)
        marks.append(sum(server.cpu_times()[:2]))
        if during is not None:
            side.append(asyncio.ensure_future(during()))

    cpu0 = time.process_time()
    await asyncio.gather(mark_start(), *(worker(ws) for ws in conns))
    for task in side:
        task.cancel()
    server_cpu = sum(server.cpu_times()[:2]) - marks[0]
    wall = clock() - t_start
    cpu = (time.process_time() - cpu0) / (wall + warmup)
    await asyncio.gather(*(ws_close(kind, ws) for ws in conns))
    lat.sort()
    return Point(
        steps_per_s=len(lat) / seconds,
        p50_ms=lat[len(lat) // 2] * 1e3,
        p99_ms=lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e3,
        errors=errors,
        loadgen_cpu=cpu,
        server_cpu_us=server_cpu / max(len(lat), 1) * 1e6,
    )


@dataclass
class SessionRun:
    ok: int
    total: int
    open_s: float
    rss_per_session_kb: float
    peak_open: int
    failures: dict[str, int] = field(default_factory=dict)


async def many_sessions(
    kind: str, port: int, pid: int, n: int, open_concurrency: int
) -> SessionRun:
    import psutil

    proc = psutil.Process(pid)
    rss0 = proc.memory_info().rss
    sem = asyncio.Semaphore(open_concurrency)
    all_open = asyncio.Event()
    opened = 0
    failures: dict[str, int] = {}

    def fail(why: str) -> bool:
        failures[why] = failures.get(why, 0) + 1
        return False

    async def session() -> bool:
        nonlocal opened
        ws = None
        try:
            async with sem:
                ws = await ws_open(port, timeout=60)
                for frame in (RESET_FRAME, STEP_FRAME, STEP_FRAME, STEP_FRAME):
                    reply = await asyncio.wait_for(ws.send(frame), 60)
                    if not reply_ok(kind, reply):
                        return fail(reply[:80].decode(errors="replace"))
            opened += 1
            if opened == n:
                all_open.set()
            await all_open.wait()
            return await ws_close(kind, ws) or fail("close timed out")
        except Exception as exc:
            return fail(type(exc).__name__ + ": " + str(exc)[:60])
        finally:
            if ws is not None and ws.transport is not None:
                ws.transport.close()

    t0 = time.perf_counter()
    tasks = [asyncio.ensure_future(session()) for _ in range(n)]
    done_opening = asyncio.ensure_future(all_open.wait())
    await asyncio.wait([done_opening, asyncio.gather(*tasks)], return_when=asyncio.FIRST_COMPLETED)
    open_s = time.perf_counter() - t0
    rss1 = proc.memory_info().rss
    peak = opened
    all_open.set()  # when some failed, release the rest to close
    results = await asyncio.gather(*tasks)
    done_opening.cancel()
    return SessionRun(
        ok=sum(results),
        total=n,
        open_s=open_s,
        rss_per_session_kb=(rss1 - rss0) / max(peak, 1) / 1024,
        peak_open=peak,
        failures=failures,
    )
