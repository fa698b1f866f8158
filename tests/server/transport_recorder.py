"""An ASGI wrapper that records what reached the server and on which route (for transport asserts)."""

from __future__ import annotations

import json
from typing import Any


def _label(text: str | bytes) -> str | None:
    try:
        msg = json.loads(text)
    except ValueError:
        return None
    if not isinstance(msg, dict):
        return None
    if "method" in msg:  # JSON-RPC (HTTP body or the data of an mcp frame)
        return str(msg["method"])
    kind = msg.get("type")
    data = msg.get("data")
    if kind == "step" and isinstance(data, dict) and "type" in data:
        return f"step:{data['type']}"
    if kind == "mcp" and isinstance(data, dict):
        return f"mcp:{data.get('method')}"
    return str(kind)


class TransportRecorder:
    """Wraps an app; ``seen`` holds ``(transport, route, label)`` for every request or frame.

    ``transport`` is ``"POST"``/``"GET"``/``"DELETE"`` or ``"ws"``; ``label`` is the JSON-RPC
    method or the frame type (``step:call_tool`` for a tool call sent as a step action).
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[str, str, str | None]] = []

    def routes(self, label: str) -> set[str]:
        """Which transports carried requests with this label."""
        return {f"{t} {r}" for t, r, seen_label in self.seen if seen_label == label}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            body = bytearray()

            async def recv_http() -> Any:
                message = await receive()
                if message["type"] == "http.request":
                    body.extend(message.get("body", b""))
                    if not message.get("more_body"):
                        label = _label(bytes(body)) if body else None
                        self.seen.append((scope["method"], scope["path"], label))
                return message

            await self.app(scope, recv_http, send)
        elif scope["type"] == "websocket":
            route = scope["path"]
            if scope.get("query_string"):
                route += "?" + scope["query_string"].decode().split("=")[0]

            async def recv_ws() -> Any:
                message = await receive()
                text = message.get("text") or message.get("bytes")
                if message["type"] == "websocket.receive" and text:
                    self.seen.append(("ws", route, _label(text)))
                return message

            await self.app(scope, recv_ws, send)
        else:
            await self.app(scope, receive, send)
