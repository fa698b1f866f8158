"""``/metrics``: one env server's figures in Prometheus' text format (``prometheus-client``).

Why: people who run thousands of sessions watch them in Prometheus and Grafana; ``/health`` says
only whether a server is up. Each server keeps its own registry (never the library's global
one), so many servers in one process (an env family's members) never collide; each family is
labelled ``env`` with the server's name.

Cost: the per-frame path only bumps plain Python counters and power-of-two bucket arrays, on
the event loop thread, with no lock; the Prometheus families are built from them when
``/metrics`` is scraped (``ServerMetrics.collect``). The WebSocket endpoint counts its own frames
on ``endpoint.metrics`` (inline: a wrapper coroutine per frame cost a third more); ``instrument``
wraps the per-session paths (open, close) of the session manager.
"""

from __future__ import annotations

import contextvars
import functools
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from .errors import CapacityError, FactoryError, QuotaError
from .frame_check import CLOSE
from .http_metrics import HttpMetrics, method_label, route_of
from .spans import ServerTracing, tracing_on

if TYPE_CHECKING:
    from .routes import EnvRoutes
    from .sessions import Session

__all__ = [
    "CONTENT_TYPE_LATEST",
    "HttpMetrics",
    "ServerMetrics",
    "count_env_event",
    "instrument",
]

#: Bucket bounds are powers of two (``Pow2Histogram``), reported at these exponents. Latency in
#: microseconds: 16 us (a trivial env's step) to 33.5 s (a sandboxed run), doubling.
LATENCY_EXPONENTS = tuple(range(4, 26))
#: Bytes of one received WebSocket message: 64 B to 16 MiB, by fours.
SIZE_EXPONENTS = tuple(range(6, 25, 2))
#: Sub-frames one batch message carried: 1 to 1024, then 4096.
BATCH_EXPONENTS = (*range(11), 12)
#: Distinct (event, status) pairs an env may count (``count_env_event``): a bound on the series
#: an env can create; later pairs are counted under ``status="other"``.
MAX_ENV_EVENTS = 64
_CURRENT: contextvars.ContextVar[ServerMetrics | None] = contextvars.ContextVar(
    "openenv_train_server_metrics", default=None
)


def pow2_buckets(
    counts: list[int], exponents: tuple[int, ...], divisor: float = 1
) -> list[tuple[str, int]]:
    """Cumulative ``(le, count)`` pairs of power-of-two bucket ``counts`` at ``2**k / divisor``
    for each ``k`` in ``exponents``, ``+Inf`` last, as Prometheus wants them."""
    out, running, i = [], 0, 0
    for k in exponents:
        while i <= k:
            running += counts[i]
            i += 1
        out.append((repr(2**k / divisor), running))
    out.append(("+Inf", sum(counts)))
    return out


#: power-of-two buckets for values up to 2**64
POW2_SLOTS = 65


class Pow2Histogram:
    """Counts of values in power-of-two buckets, and their sum (loop thread only: no lock)."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * POW2_SLOTS
        self.total = 0

    def observe(self, value: int) -> None:
        """Count ``value`` (a non-negative int) in bucket ``k``, the smallest with ``value <=
        2**k`` (0 and 1 land in 0): one C call, exact at every bound."""
        self.counts[(value and value - 1).bit_length()] += 1
        self.total += value


#: The frame types counted by name (anything else is ``other``).
FRAME_KINDS = ("reset", "step", "state", "close", "mcp", "mcp_ws")


class KindStats:
    """One frame type's outcomes and latency. Every answered frame lands in a microsecond
    bucket of ``latency_us`` (power-of-two), so the ``ok`` ones are those
    neither ``error`` nor ``close``; ``total_ns`` sums their nanoseconds."""

    __slots__ = ("kind", "error", "close", "latency_us", "total_ns")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.error = self.close = 0
        self.latency_us = [0] * POW2_SLOTS
        self.total_ns = 0

    @property
    def ok(self) -> int:
        return sum(self.latency_us) - self.error - self.close

    def observe(self, took_ns: int) -> None:
        """One answer that took ``took_ns``: bucket ``k`` holds up to ``2**k`` microseconds,
        exact at each bound (0 ns lands in bucket 1, below every reported bound)."""
        self.latency_us[((took_ns - 1) // 1000).bit_length()] += 1
        self.total_ns += took_ns


class ServerMetrics:
    """The counters of one env server, and the Prometheus collector that reports them."""

    def __init__(self, routes: EnvRoutes) -> None:
        self.env = env_label(routes.env_factory, routes.name)
        self.manager = routes.sessions
        self.registry = CollectorRegistry(auto_describe=False)
        #: per frame type: outcomes and latency (prebuilt: the frame path never adds a key)
        self.kinds = {k: KindStats(k) for k in (*FRAME_KINDS, "other")}
        self.other = self.kinds["other"]
        self.errors: dict[str, int] = {}
        self.requests: dict[tuple[str, str, str], int] = {}
        self.message_bytes = Pow2Histogram()
        self.batch_frames = Pow2Histogram()
        self.opened: dict[str, int] = {}
        self.closed = 0
        self.refused: dict[str, int] = {}
        self.events: dict[tuple[str, str], int] = {}
        self.tracing = ServerTracing(self.env)
        self.registry.register(self)

    # ---- what the hooks call -----------------------------------------------------------------

    def count_error(self, reply: str) -> None:
        code = _error_code(reply)
        self.errors[code] = self.errors.get(code, 0) + 1

    def bind(self) -> None:
        """Make this server the one ``count_env_event`` counts on, in the calling task (a
        connection's, once: its frames' env calls run in it or in copies of its context)."""
        _CURRENT.set(self)

    def answered(self, kind: Any, reply: Any, took_ns: int, size: int = -1) -> None:
        """Count one answered frame of type ``kind``: its latency, outcome and, when it came
        in a message of its own, the message's ``size`` (a batch's sub-frames: -1, the batch
        is counted once). The per-frame path: a dict lookup, an index and a few adds (the
        error path reads the code)."""
        try:
            st = self.kinds.get(kind, self.other)
        except TypeError:  # an unhashable "type" (the reply is its error frame)
            st = self.other
        # KindStats.observe and Pow2Histogram.observe, inlined (a call fewer each per frame);
        # a size of 0 lands in bucket 1, below every reported bound
        st.latency_us[((took_ns - 1) // 1000).bit_length()] += 1
        st.total_ns += took_ns
        if size >= 0:
            sizes = self.message_bytes
            sizes.counts[(size - 1).bit_length()] += 1
            sizes.total += size
        if reply is CLOSE:
            st.close += 1
        elif reply[9] == "e":  # '{"type":"error"...': the only reply type starting with e
            self.errored(st, reply)

    def errored(self, st: KindStats, reply: str) -> None:
        """An error frame answered a frame of ``st``'s type."""
        st.error += 1
        self.count_error(reply)

    async def traced(
        self,
        handle: Callable[..., Awaitable[Any]],
        session: Session,
        msg: dict[str, Any],
        size: int = -1,
    ) -> Any:
        """``handle(session, msg)`` (which sets ``session.took_ns``), counted as ``answered``
        counts, in a span when tracing is on; the caller's ``traceparent`` member is taken off
        the frame first (the frame path comes here only when the frame has more than two
        members or tracing is on)."""
        parent = msg.pop("traceparent", None)
        kind = msg.get("type")
        tracing = self.tracing
        span = tracing.start(kind, session, parent) if type(kind) is str and tracing_on() else None
        try:
            reply = await handle(session, msg)
        except BaseException:  # cancelled (the connection ended): the span still ends
            if span is not None:
                tracing.end(span, None)
            raise
        self.answered(kind, reply, session.took_ns, size)
        if span is not None:
            tracing.end(span, reply)
        return reply

    def batch_message(self, size: int, frames: int) -> None:
        """One batch-framed message of ``size`` bytes carrying ``frames`` sub-frames arrived."""
        self.message_bytes.observe(size)
        self.batch_frames.observe(frames)

    def request_done(self, path: str, method: str, status: int) -> None:
        key = (route_of(path), method_label(method), f"{status // 100}xx")
        self.requests[key] = self.requests.get(key, 0) + 1

    def event(self, name: str, status: str) -> None:
        key = (name, status)
        if key not in self.events and len(self.events) >= MAX_ENV_EVENTS:
            key = (name, "other") if (name, "other") in self.events else ("other", "other")
        self.events[key] = self.events.get(key, 0) + 1

    # ---- the Prometheus collector ------------------------------------------------------------

    def collect(self) -> Iterator[Metric]:
        yield from self._session_families()
        yield from self._frame_families()
        yield from self._histogram_families()

    def _session_families(self) -> Iterator[Metric]:
        env = self.env
        manager = self.manager
        labels = ["env"]
        yield _gauge(
            "openenv_server_sessions_open",
            "Sessions open now (envs being built included)",
            labels,
            [([env], manager.active)],
        )
        yield _gauge(
            "openenv_server_sessions_max",
            "The server's session bound (max_sessions)",
            labels,
            [([env], manager.max_sessions)],
        )
        by_kind: dict[str, int] = {}
        for s in list(manager.sessions.values()):
            by_kind[s.kind] = by_kind.get(s.kind, 0) + 1
        yield _gauge(
            "openenv_server_sessions_by_kind",
            "Open sessions by transport (ws: /ws or /mcp WebSocket, http: HTTP /mcp)",
            ["env", "kind"],
            [([env, k], n) for k, n in by_kind.items()],
        )
        yield _counter(
            "openenv_server_sessions_opened",
            "Sessions opened",
            ["env", "kind"],
            [([env, k], n) for k, n in self.opened.items()],
        )
        yield _counter(
            "openenv_server_sessions_closed",
            "Sessions closed (by the client, the connection's end or the reaper)",
            labels,
            [([env], self.closed)],
        )
        yield _counter(
            "openenv_server_sessions_reaped",
            "Idle sessions the reaper closed",
            labels,
            [([env], manager.reaped)],
        )
        yield _counter(
            "openenv_server_sessions_refused",
            "Session openings refused: capacity (max_sessions), quota (per client address) or factory (the env failed to build)",
            ["env", "reason"],
            [([env, r], n) for r, n in self.refused.items()],
        )

    def _frame_families(self) -> Iterator[Metric]:
        env = self.env
        yield _counter(
            "openenv_server_frames",
            "WebSocket request frames answered (batch sub-frames each count), by type and outcome",
            ["env", "type", "outcome"],
            [
                ([env, st.kind, outcome], n)
                for st in self.kinds.values()
                for outcome, n in (("ok", st.ok), ("error", st.error), ("close", st.close))
                if n
            ],
        )
        yield _counter(
            "openenv_server_errors",
            "Error frames sent, by error code",
            ["env", "code"],
            [([env, c], n) for c, n in self.errors.items()],
        )
        yield _counter(
            "openenv_server_requests",
            "HTTP requests answered, by route, method and status class",
            ["env", "route", "method", "status"],
            [([env, r, m, s], n) for (r, m, s), n in self.requests.items()],
        )
        yield _counter(
            "openenv_server_env_calls",
            "Env reset/step/state calls made (those that raised included), by how they ran: inline (sync, on the event loop), thread (sync, in a worker thread) or async",
            ["env", "mode"],
            [([env, m], n) for m, n in self.env_calls().items() if n],
        )
        yield _counter(
            "openenv_server_env_events",
            "Events an env counted (count_env_event), e.g. the coding env's sandbox runs by status",
            ["env", "event", "status"],
            [([env, e, s], n) for (e, s), n in self.events.items()],
        )

    def _histogram_families(self) -> Iterator[Metric]:
        env = self.env
        latency = HistogramMetricFamily(
            "openenv_server_frame_seconds",
            "Seconds from a frame's arrival at its session to its reply (the env call included), by frame type",
            labels=["env", "type"],
        )
        for st in self.kinds.values():
            if any(st.latency_us):
                buckets = pow2_buckets(st.latency_us, LATENCY_EXPONENTS, 1e6)
                latency.add_metric([env, st.kind], buckets, st.total_ns / 1e9)
        yield latency
        yield _histogram(
            "openenv_server_message_bytes",
            "Bytes of each WebSocket message received on /ws (a batch message counts once)",
            env,
            pow2_buckets(self.message_bytes.counts, SIZE_EXPONENTS),
            self.message_bytes.total,
        )
        yield _histogram(
            "openenv_server_batch_frames",
            "Sub-frames per batch-framed message",
            env,
            pow2_buckets(self.batch_frames.counts, BATCH_EXPONENTS),
            self.batch_frames.total,
        )

    def env_calls(self) -> dict[str, int]:
        """Env calls by how they ran, summed over this server's call plans (one per env class)."""
        out = {"inline": 0, "thread": 0, "async": 0}
        for plan in list(self.manager.plans.values()):
            out["inline"] += plan.ran_inline
            out["thread"] += plan.ran_thread
            out["async"] += plan.ran_async
        return out

    def exposition(self) -> bytes:
        """The text a scrape gets."""
        return generate_latest(self.registry)


def _gauge(name: str, doc: str, labels: list[str], rows: list[tuple[list[str], float]]) -> Metric:
    family = GaugeMetricFamily(name, doc, labels=labels)
    for values, value in rows:
        family.add_metric(values, value)
    return family


def _counter(name: str, doc: str, labels: list[str], rows: list[tuple[list[str], float]]) -> Metric:
    family = CounterMetricFamily(name, doc, labels=labels)
    for values, value in rows:
        family.add_metric(values, value)
    return family


def _histogram(
    name: str, doc: str, env: str, buckets: list[tuple[str, int]], total: float
) -> Metric:
    family = HistogramMetricFamily(name, doc, labels=["env"])
    family.add_metric([env], buckets, total)
    return family


def env_label(factory: Any, name: str) -> str:
    """The ``env`` label: the server's name; for a family member built from
    ``functools.partial(EnvClass, "member")`` (the family packages' apps), ``EnvClass/member``,
    so each member of a family is told apart."""
    if isinstance(factory, functools.partial) and isinstance(factory.func, type):
        args = [str(a) for a in factory.args if isinstance(a, (str, int))]
        args += [
            f"{k}={v}" for k, v in sorted(factory.keywords.items()) if isinstance(v, (str, int))
        ]
        return "/".join([factory.func.__name__, *args])[:200]
    return name[:200]


def _error_code(reply: str) -> str:
    """The ``code`` of an error frame, read without decoding the frame (error path only)."""
    at = reply.find('"code":"')
    if at < 0:
        return "unknown"
    end = reply.find('"', at + 8)
    return reply[at + 8 : end][:64] if end > 0 else "unknown"


def count_env_event(name: str, status: str) -> None:
    """Count one event of an env (``name``, e.g. ``"sandbox_run"``, and its ``status``) on the
    server whose request is running the env; a no-op outside a server's request. Shown as
    ``openenv_server_env_events_total{event=name, status=status}``."""
    metrics = _CURRENT.get()
    if metrics is not None:
        metrics.event(str(name)[:64], str(status)[:64])


def instrument(routes: EnvRoutes) -> ServerMetrics:
    """Count what ``routes``' sessions and WebSocket endpoint do, and trace reset and step;
    returns the metrics, whose ``registry`` ``/metrics`` serves. The endpoint counts its frames
    on ``endpoint.metrics`` itself (no wrapper on the per-frame path); the session manager's
    open and close, a per-session path, are wrapped here."""
    metrics = ServerMetrics(routes)
    endpoint = routes.ws_endpoint
    manager = routes.sessions
    create = manager.create
    destroy = manager.destroy
    tracing = metrics.tracing

    async def counted_create(*args: Any, **kwargs: Any) -> Any:
        try:
            session = await create(*args, **kwargs)
        except CapacityError:
            metrics.refused["capacity"] = metrics.refused.get("capacity", 0) + 1
            raise
        except QuotaError:
            metrics.refused["quota"] = metrics.refused.get("quota", 0) + 1
            raise
        except FactoryError:
            metrics.refused["factory"] = metrics.refused.get("factory", 0) + 1
            raise
        kind = session.kind
        metrics.opened[kind] = metrics.opened.get(kind, 0) + 1
        return session

    async def counted_destroy(session: Session) -> None:
        if not session.closed and session.id:
            metrics.closed += 1
            tracing.forget(session)
        await destroy(session)

    endpoint.metrics = metrics
    endpoint.on_handshake = tracing.handshake  # type: ignore[attr-defined]
    manager.create = counted_create  # type: ignore[method-assign]
    manager.destroy = counted_destroy  # type: ignore[method-assign]
    return metrics


def count_mcp_frames(endpoint: Any, metrics: ServerMetrics) -> None:
    """Count the JSON-RPC messages of the ``/mcp`` WebSocket (``McpWebSocket``) as frames of
    type ``mcp_ws``: ``error`` when the reply is a JSON-RPC error, with their latency."""
    answer = endpoint._answer
    st = metrics.kinds["mcp_ws"]
    clock = time.perf_counter_ns
    current = _CURRENT

    async def counted_answer(session: Session, host: str | None, text: str | bytes) -> Any:
        current.set(metrics)
        t0 = clock()
        reply = await answer(session, host, text)
        if type(reply) is not str:
            return reply
        st.observe(clock() - t0)
        # the top-level member (after jsonrpc and id) comes before any nested text
        error_at, result_at = reply.find('"error":{'), reply.find('"result":')
        if error_at >= 0 and (result_at < 0 or error_at < result_at):
            st.error += 1
        return reply

    endpoint._answer = counted_answer
