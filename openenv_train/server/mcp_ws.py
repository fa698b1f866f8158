"""MCP JSON-RPC over a WebSocket on ``/mcp`` (as OpenEnv 0.10 serves it).

Each connection gets its own session (its own env instance) for its lifetime; every text frame
is one JSON-RPC request answered by the same ``McpHandler`` as ``POST /mcp``, so tools are
called directly (no step). The session ends when the socket closes. Frames pass the same
``FrameCheck`` as ``/ws`` (size, rate, session state) on the same receive path.
"""

from __future__ import annotations

import functools

from starlette.types import Receive, Scope, Send

from ..core.mcp_types import JsonRpcCode
from ..core.wire import dumps
from .encoding import JSONDecodeError, loads
from .frame_check import FrameCheck
from .jsonrpc import McpHandler, rpc_error
from .limits import Limits
from .sessions import FactoryError, Session, SessionManager, SessionRefused
from .ws_receive import DISCONNECT_ERRORS, receive_frames, send_and_close

SESSION_KIND = "mcp-ws"
#: What a request on a session closed under its socket (the idle reaper) gets; then it closes.
SESSION_GONE = "Session was closed (idle timeout); reconnect"


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
        host = client[0] if client else None
        try:
            session = await self.manager.create(SESSION_KIND, host)
        except SessionRefused as exc:
            reply = rpc_error(JsonRpcCode.SERVER_ERROR, str(exc), None, exc.rpc_data())
            await send_and_close(send, dumps(reply))
            return
        except FactoryError as exc:
            data = {"factory_name": exc.factory_name}
            reply = rpc_error(JsonRpcCode.SERVER_ERROR, str(exc), None, data)
            await send_and_close(send, dumps(reply))
            return
        gone = dumps(rpc_error(JsonRpcCode.SERVER_ERROR, SESSION_GONE))
        check = FrameCheck(self.limits, session, gone)
        try:
            await receive_frames(
                receive, send, check, functools.partial(self._answer, session, host)
            )
        except DISCONNECT_ERRORS:
            pass  # the client vanished mid-send; the session is freed below
        finally:
            await self.manager.destroy(session)

    async def _answer(self, session: Session, host: str | None, text: str | bytes) -> str | None:
        if not text:
            return None  # an empty frame is skipped, never answered (as it always was)
        try:
            req = loads(text)
        except JSONDecodeError:
            return dumps(rpc_error(JsonRpcCode.PARSE_ERROR))
        start = session.enter()
        try:
            async with session.lock:
                reply = await self.handler.handle(req, ws_session=session, client=host)
        finally:
            session.leave(start)
        return dumps(reply)
