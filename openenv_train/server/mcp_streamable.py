"""The MCP streamable-HTTP transport on ``/mcp``, beside OpenEnv 0.10's plain JSON-RPC calls.

A real MCP client (the official ``mcp`` SDK) posts ``initialize`` without an ``Mcp-Session-Id``
header: we negotiate the protocol version, build an env session (kind ``"mcp"``, under the same
capacity limit and idle reaper as WebSocket sessions) and return its id in the header. Every
later request carries that header and runs on that session's env: ``ping``, ``tools/list``,
``tools/call``, notifications (answered 202), and ``DELETE /mcp`` closes the session. We answer
with ``application/json`` (the transport allows it) and refuse ``GET`` with 405 (no server-push
stream: our envs never send requests or notifications to the client).

A request without the header that is not ``initialize``/``ping`` goes to OpenEnv's plain
JSON-RPC handler unchanged (``tools/list``, ``tools/call``, ``openenv/session/*``).

Why not the SDK's ``StreamableHTTPSessionManager``: it mints session ids itself, creates a
session for every ``initialize`` with no hook to refuse one at capacity, keeps a task per
session alive until the client deletes it (no idle reaping tied to our env instances), and
needs its task group started in the app's lifespan. Our session manager already does all of
that per env instance; this module only speaks the transport on top of it, and keeps the
``mcp`` package out of the server's dependencies.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from ..core.mcp_types import JsonRpcCode
from .jsonrpc import McpHandler, rpc_error, rpc_result
from .sessions import FactoryError, SessionManager, SessionRefused

#: Protocol revisions we speak, oldest first; the last one is offered when the client's is unknown.
SUPPORTED_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[-1]
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
SESSION_KIND = "mcp"
_HANDSHAKE_METHODS = frozenset({"initialize", "ping"})


class StreamableMcp:
    """Routes ``/mcp`` requests: MCP sessions by header, everything else to ``McpHandler``."""

    def __init__(self, manager: SessionManager, handler: McpHandler, server_name: str) -> None:
        self.manager = manager
        self.handler = handler
        self.server_name = server_name

    def add_routes(self, app: FastAPI) -> None:
        """``GET`` (405: no push stream) and ``DELETE`` (end a session) beside the POST route."""
        app.add_api_route("/mcp", self.get, methods=["GET"], include_in_schema=False)
        app.add_api_route("/mcp", self.delete, methods=["DELETE"], tags=["MCP"])

    async def post(self, request: Request, req: Any) -> Response:
        """Answer one parsed JSON-RPC message posted to ``/mcp``."""
        sid = request.headers.get(SESSION_HEADER)
        method = req.get("method") if isinstance(req, dict) else None
        client = request.client.host if request.client else None  # charged for its sessions
        if sid is None:
            if method == "initialize":
                return await self._initialize(req, client)
            if method == "ping" and "id" in req:
                return JSONResponse(rpc_result({}, req["id"]))
            return JSONResponse(await self.handler.handle(req, client=client))
        session = self.manager.get(sid)
        if session is None or session.kind != SESSION_KIND:
            return _not_found(req, sid)
        session.touch()
        version = request.headers.get(VERSION_HEADER)
        if version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
            err = rpc_error(
                JsonRpcCode.INVALID_REQUEST,
                f"Unsupported {VERSION_HEADER} header {version!r}; "
                f"supported: {', '.join(SUPPORTED_PROTOCOL_VERSIONS)}",
                _req_id(req),
            )
            return JSONResponse(err, status_code=400)
        if isinstance(req, dict) and "id" not in req and isinstance(method, str):
            return Response(status_code=202)  # a notification (or a stray response): no reply
        if method in _HANDSHAKE_METHODS:
            if method == "ping":
                return JSONResponse(rpc_result({}, req.get("id")))
            err = rpc_error(JsonRpcCode.INVALID_REQUEST, "Session already initialized", req["id"])
            return JSONResponse(err)
        if method in ("tools/list", "tools/call") and isinstance(req.get("params", {}), dict):
            params = {**(req.get("params") or {}), "session_id": sid}
            reply = await self.handler.handle({**req, "params": params}, client=client)
            return JSONResponse(tool_error_as_result(reply) if method == "tools/call" else reply)
        if method in ("openenv/session/create", "openenv/session/close"):
            err = rpc_error(
                JsonRpcCode.INVALID_REQUEST,
                f"{method} is for plain JSON-RPC clients; an MCP session is closed with "
                "DELETE /mcp and its Mcp-Session-Id header",
                _req_id(req),
            )
            return JSONResponse(err)
        return JSONResponse(await self.handler.handle(req, client=client))

    async def get(self, request: Request) -> Response:
        return JSONResponse(
            rpc_error(JsonRpcCode.INVALID_REQUEST, "This server offers no SSE stream on GET /mcp"),
            status_code=405,
            headers={"Allow": "POST, DELETE"},
        )

    async def delete(self, request: Request) -> Response:
        sid = request.headers.get(SESSION_HEADER)
        if not sid:
            err = rpc_error(JsonRpcCode.INVALID_REQUEST, f"DELETE /mcp needs an {SESSION_HEADER}")
            return JSONResponse(err, status_code=400)
        session = self.manager.get(sid)
        if session is None or session.kind != SESSION_KIND:
            return _not_found(None, sid)
        await self.manager.destroy(session)
        return Response(status_code=204)

    async def _initialize(self, req: dict[str, Any], client: str | None) -> Response:
        req_id = _req_id(req)
        params = req.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
            err = rpc_error(
                JsonRpcCode.INVALID_PARAMS,
                "initialize needs params.protocolVersion (a string such as "
                f"{LATEST_PROTOCOL_VERSION!r}), params.capabilities and params.clientInfo",
                req_id,
            )
            return JSONResponse(err)
        try:
            session = await self.manager.create(SESSION_KIND, client=client)
        except SessionRefused as exc:
            data = exc.rpc_data()
            return JSONResponse(rpc_error(JsonRpcCode.SERVER_ERROR, str(exc), req_id, data))
        except FactoryError as exc:
            data = {"factory_name": exc.factory_name}
            return JSONResponse(rpc_error(JsonRpcCode.SERVER_ERROR, str(exc), req_id, data))
        result = initialize_result(
            params["protocolVersion"],
            self.server_name,
            "Each MCP session has its own env instance; DELETE /mcp ends it.",
        )
        return JSONResponse(rpc_result(result, req_id), headers={SESSION_HEADER: session.id})


def initialize_result(asked: str, server_name: str, instructions: str) -> dict[str, Any]:
    """The ``initialize`` result: the client's protocol version if we speak it, else our latest."""
    version = asked if asked in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": {"name": server_name, "version": "0.1.0"},
        "instructions": instructions,
    }


def _req_id(req: Any) -> Any:
    rid = req.get("id") if isinstance(req, dict) else None
    return rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None


def _not_found(req: Any, sid: str) -> Response:
    err = rpc_error(
        JsonRpcCode.INVALID_REQUEST,
        f"Unknown or closed MCP session {sid!r} (closed, reaped when idle, or never created); "
        "send initialize again without an Mcp-Session-Id header",
        _req_id(req),
    )
    return JSONResponse(err, status_code=404)


def tool_error_as_result(reply: dict[str, Any]) -> dict[str, Any]:
    """A tool that raised or got bad arguments -> a ``CallToolResult`` with ``isError``.

    MCP clients show such results to the model so it can correct itself; an unknown tool stays
    a JSON-RPC error (-32602) as the spec asks.
    """
    err = reply.get("error")
    data = err.get("data") if isinstance(err, dict) else None
    if not isinstance(data, dict) or data.get("error_type") not in (
        "execution_error",
        "invalid_args",
    ):
        return reply
    result = {
        "content": [{"type": "text", "text": str(err.get("message", ""))}],
        "isError": True,
        "_meta": {"error_type": data["error_type"]},
    }
    return rpc_result(result, reply.get("id"))
