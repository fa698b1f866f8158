"""The W3C ``traceparent`` of the caller's current OpenTelemetry span, for the server.

Why: the env server's spans for reset and step join the trainer's trace (episode -> env call ->
server step). Without the OpenTelemetry API, or outside a recording span, there is none and the
wire carries nothing extra.
"""

from __future__ import annotations

try:  # the `otel` extra
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - without the extra, nothing is carried
    _trace = None

__all__ = ["current_traceparent"]


def current_traceparent() -> str | None:
    """``00-<trace id>-<span id>-<flags>`` of the current span, or None (no span, tracing off)."""
    if _trace is None:
        return None
    ctx = _trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"
