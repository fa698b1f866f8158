"""The one WebSocket receive path: every connection kind is a ``FrameCheck`` plus a handler.

``receive_frames`` serves ``/ws`` (standard and batch framing) and MCP over ``/mcp``. It takes
each message, applies the connection's ``FrameCheck`` (size, rate, session state), hands the
text to the kind's handler (``frame(text)``: the reply text, None for no reply now, or
``CLOSE``) and sends the reply. Which receive path runs is its business, not the caller's: the
protocol's push callback (``ws_push.FramePump``: answered inside ``data_received``) when the
server runs our protocol class with its own ``receive``/``send``, else the plain ASGI loop
below. Both end the same way: 1009 for an oversize message, ``gone_reply`` and a close for a
frame on a closed session, and ``CLOSE`` (returned) for the caller to finish.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from .frame_check import CLOSE, DISCONNECTED, GONE, TOO_BIG, FrameCheck
from .ws_push import Frame, FramePump, pump_protocol

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

__all__ = [
    "CLOSE",
    "DISCONNECT_ERRORS",
    "DISCONNECTED",
    "Frame",
    "receive_frames",
    "send_and_close",
]


async def receive_frames(receive: Receive, send: Send, check: FrameCheck, frame: Frame) -> Any:
    """Serve one connection's messages until it ends; returns ``CLOSE`` (the handler answered a
    ``close`` frame: the caller closes the session and the socket) or how it ended otherwise
    (``DISCONNECTED``, ``TOO_BIG``, ``GONE``: already answered on the wire)."""
    proto = pump_protocol(receive, send)
    if proto is not None:
        outcome = await FramePump(check, frame, proto, send).run()
    else:
        outcome = await _asgi_frames(receive, send, check, frame)
    if outcome is TOO_BIG:
        await send({"type": "websocket.close", "code": 1009, "reason": check.too_big_reason})
    elif outcome is GONE:
        await send_and_close(send, check.gone_reply)
    return outcome


async def _asgi_frames(receive: Receive, send: Send, check: FrameCheck, frame: Frame) -> Any:
    while True:
        message = await receive()
        text = message.get("text")
        if text is None:
            if message["type"] == "websocket.disconnect":
                return DISCONNECTED
            text = message.get("bytes")
            if text is None:
                continue
        verdict = check.verdict(text)
        if verdict:
            if type(verdict) is not float:
                return verdict
            await asyncio.sleep(verdict)  # a flooding client is slowed down, not served faster
            if check.gone():
                return GONE
        reply = await frame(text)
        if reply is None:
            continue
        if reply is CLOSE:
            return CLOSE
        await send({"type": "websocket.send", "text": reply})


#: What a send to a client that already went away raises.
DISCONNECT_ERRORS = (OSError, RuntimeError, ConnectionError)


async def send_and_close(send: Send, text: str) -> None:
    """Send one frame, then close normally (1000); a client already gone is not an error."""
    try:
        await send({"type": "websocket.send", "text": text})
        await send({"type": "websocket.close", "code": 1000, "reason": ""})
    except DISCONNECT_ERRORS:
        pass
