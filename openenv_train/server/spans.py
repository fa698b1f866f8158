"""OpenTelemetry spans for an env server's resets and steps, children of the caller's trace.

Why: a slow training step is followed from the episode down to the env call that took the time.
The caller's W3C ``traceparent`` comes per frame on a batch connection (many sessions share it)
or, on a one-session ``/ws`` connection, from the WebSocket handshake. Tracing is on only when
the OpenTelemetry SDK is installed and a tracer provider is set (``setup_tracing`` sets one from
the ``OTEL_*`` variables); otherwise every hook returns at once and nothing is exported.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

try:  # the `otel` extra
    from opentelemetry import trace as _trace
    from opentelemetry.trace import ProxyTracerProvider, SpanKind, Status, StatusCode
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    _PROPAGATOR: Any = TraceContextTextMapPropagator()
except ImportError:  # pragma: no cover - without the extra, tracing is off
    _trace = None

if TYPE_CHECKING:
    from .sessions import Session

__all__ = ["ServerTracing", "setup_tracing", "tracer_for", "tracing_on"]

#: The most handshake traceparents one server keeps (one per open one-session connection).
MAX_HANDSHAKES = 65536


_UNKNOWN = object()
#: (provider, name) -> tracer; the key holds the provider, so a later one never reuses its id
_TRACERS: dict[tuple[Any, str], Any] = {}


def _provider() -> Any | None:
    """The tracer provider the program set, or None. Read from the API module's global: its
    public getter costs microseconds per call (it reads ``os.environ``), too much per frame; a
    later API without that global falls back to the getter."""
    provider = getattr(_trace, "_TRACER_PROVIDER", _UNKNOWN)
    if provider is _UNKNOWN:  # pragma: no cover - another OpenTelemetry API version
        provider = _trace.get_tracer_provider()
    if provider is None or isinstance(provider, (ProxyTracerProvider, _trace.NoOpTracerProvider)):
        return None
    return provider


#: the API keeps the provider a program set in a module global: read it directly (tens of ns)
_FAST = _trace is not None and hasattr(_trace, "_TRACER_PROVIDER")


def tracing_on() -> bool:
    """Whether spans are recorded: the SDK is installed and a tracer provider is set."""
    if _FAST:
        if _trace._TRACER_PROVIDER is None:  # the per-frame answer with tracing off
            return False
    elif _trace is None:
        return False
    return _provider() is not None


def tracer_for(name: str) -> Any | None:
    """A tracer named ``name`` when a real tracer provider is set, else None (tracing off)."""
    if _trace is None:
        return None
    provider = _provider()
    if provider is None:
        return None
    key = (provider, name)
    tracer = _TRACERS.get(key)
    if tracer is None:
        tracer = _TRACERS[key] = provider.get_tracer(name)
    return tracer


def setup_tracing(service_name: str) -> bool:
    """Export spans over OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set and no tracer provider is set yet; returns
    whether spans are now exported. Nothing happens (and nothing is imported) when unset."""
    if not (
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    ):
        return False
    if _trace is None:
        raise RuntimeError(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed: "
            "pip install 'openenv-train[otel]' (or unset the variable)"
        )
    if tracer_for(service_name) is not None:
        return True  # the program set its own provider
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", service_name)})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    _trace.set_tracer_provider(provider)
    return True


class ServerTracing:
    """One server's spans: ``env.reset`` / ``env.step`` / ``env.state``, SERVER kind."""

    def __init__(self, env: str) -> None:
        self.env = env
        self.handshakes: dict[str, str] = {}  # session id -> the handshake's traceparent

    on = staticmethod(tracing_on)

    def handshake(self, session: Session, scope: dict[str, Any]) -> None:
        """Keep a one-session connection's handshake ``traceparent`` for its frames' spans."""
        if _trace is None or len(self.handshakes) >= MAX_HANDSHAKES:
            return
        for name, value in scope.get("headers") or ():
            if name == b"traceparent":
                self.handshakes[session.id] = value.decode("latin-1")[:128]
                return

    def forget(self, session: Session) -> None:
        self.handshakes.pop(session.id, None)

    def start(self, kind: str, session: Session, parent: Any) -> Any | None:
        if kind not in ("reset", "step", "state"):
            return None
        tracer = tracer_for("openenv_train.server")
        if tracer is None:
            return None
        if type(parent) is not str:
            parent = self.handshakes.get(session.id)
        context = _PROPAGATOR.extract({"traceparent": parent}) if parent else None
        return tracer.start_span(
            f"env.{kind}",
            context=context,
            kind=SpanKind.SERVER,
            attributes={"openenv.env": self.env, "openenv.frame": kind},
        )

    def start_http(self, method: str, route: str, scope: dict[str, Any]) -> Any | None:
        """A span for one HTTP request (``/reset``, ``/step``, ``/mcp``...), child of its
        ``traceparent`` header when it has one."""
        tracer = tracer_for("openenv_train.server")
        if tracer is None:
            return None
        parent = None
        for name, value in scope.get("headers") or ():
            if name == b"traceparent":
                parent = value.decode("latin-1")[:128]
                break
        context = _PROPAGATOR.extract({"traceparent": parent}) if parent else None
        return tracer.start_span(
            f"http {method} {route}",
            context=context,
            kind=SpanKind.SERVER,
            attributes={"openenv.env": self.env, "http.route": route, "http.method": method},
        )

    @staticmethod
    def end_http(span: Any, status: int) -> None:
        span.set_attribute("http.status_code", status)
        if status >= 500:
            span.set_status(Status(StatusCode.ERROR, f"HTTP {status}"))
        span.end()

    @staticmethod
    def end(span: Any, reply: Any) -> None:
        if reply is None:
            span.set_status(Status(StatusCode.ERROR, "cancelled"))
        elif type(reply) is str and reply.startswith('{"type":"error"'):
            span.set_status(Status(StatusCode.ERROR, reply[:200]))
        span.end()
