"""HTTP requests on ``/metrics``: the ASGI middleware that counts each request by route,
method and status class (and traces it when tracing is on), with the label rules that keep a
client from creating one series per URL or method it makes up."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .metrics import ServerMetrics

#: The HTTP routes counted by name; any other path is counted as ``route="other"`` (a client
#: must not be able to create one series per URL it makes up).
KNOWN_ROUTES = frozenset(
    {
        "/health",
        "/sessions",
        "/schema",
        "/metadata",
        "/metrics",
        "/reset",
        "/step",
        "/state",
        "/mcp",
        "/web",
    }
)


_METHODS = frozenset({"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"})


def method_label(method: str) -> str:
    """The ``method`` label: a standard HTTP method, or ``other``."""
    return method if method in _METHODS else "other"


def route_of(path: str) -> str:
    """The ``route`` label of a request path: a known route, ``/web``, or ``other``."""
    return path if path in KNOWN_ROUTES else ("/web" if path.startswith("/web") else "other")


class HttpMetrics:
    """ASGI middleware: count each HTTP request by route, method and status class."""

    def __init__(self, app: Callable[..., Awaitable[None]], metrics: ServerMetrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = [500]
        metrics = self.metrics
        metrics.bind()  # an env event counted in this request counts on this server
        path, method = scope["path"], scope.get("method", "")
        span = (
            metrics.tracing.start_http(method, route_of(path), scope)
            if metrics.tracing.on()
            else None
        )

        async def send_counted(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_counted)
        finally:
            metrics.request_done(path, method, status[0])
            if span is not None:
                metrics.tracing.end_http(span, status[0])
