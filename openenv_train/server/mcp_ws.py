"""MCP JSON-RPC over a WebSocket on ``/mcp`` (as OpenEnv 0.10 serves it).

Each connection gets its own session (its own env instance) for its lifetime; every text frame
is one JSON-RPC request answered by the same ``McpHandler`` as ``POST /mcp``, so tools are
called directly (no step). The session ends when the socket closes.
"""

from __future__ import annotations

from typing import Any

from starlette.types import Receive, Scope, Send

from ..core.mcp import JsonRpcCode
from ..core.wire import dumps
from .encoding import JSONDecodeError, loads
from .jsonrpc import McpHandler, rpc_error
from .limits import Limits
from .sessions import FactoryError, SessionManager, SessionRefused

SESSION_KIND = "mcp-ws"
_GONE = (OSError, RuntimeError, ConnectionError)


class McpWebSocket:
    """The raw ASGI endpoint for ``websocket /mcp``."""

    def __init__(self, manager: SessionManager, handler: McpHandler, limits: Limits) -> None:
        self.manager = manager
        self.handler = handler
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        first = await receive()
        if first["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        client = scope.get("client")
        try:
            session = await self.manager.create(SESSION_KIND, client[0] if client else None)
        except SessionRefused as exc:
            await _close_with(
                send, rpc_error(JsonRpcCode.SERVER_ERROR, str(exc), None, exc.rpc_data())
            )
            return
        except FactoryError as exc:
            data = {"factory_name": exc.factory_name}
            await _close_with(send, rpc_error(JsonRpcCode.SERVER_ERROR, str(exc), None, data))
            return
        try:
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    return
                text = message.get("text") or message.get("bytes")
                if text is None:
                    continue
                if len(text) > self.limits.max_frame_bytes:
                    await send(
                        {"type": "websocket.close", "code": 1009, "reason": "message too big"}
                    )
                    return
                reply = await self._answer(text, session, client)
                await send({"type": "websocket.send", "text": dumps(reply)})
        except _GONE:
            pass  # the client vanished mid-send; the session is freed below
        finally:
            await self.manager.destroy(session)

    async def _answer(self, text: str | bytes, session: Any, client: Any) -> dict[str, Any]:
        try:
            req = loads(text)
        except JSONDecodeError:
            return rpc_error(JsonRpcCode.PARSE_ERROR)
        session.enter()
        try:
            async with session.lock:
                return await self.handler.handle(
                    req, ws_session=session, client=client[0] if client else None
                )
        finally:
            session.busy -= 1
            session.touch()


async def _close_with(send: Send, reply: dict[str, Any]) -> None:
    try:
        await send({"type": "websocket.send", "text": dumps(reply)})
        await send({"type": "websocket.close", "code": 1000, "reason": ""})
    except _GONE:
        pass
