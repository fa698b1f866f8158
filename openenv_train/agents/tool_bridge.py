"""``ToolBridge``: one env instance's MCP tools over streamable HTTP, for the harness inside it.

The harness program is an MCP client (e.g. the official SDK); it must reach *this* env
instance, not a fresh session, so the bridge calls ``env.call_tool`` directly. Tools renamed by
conflict resolution are served under their new names. Loopback only; one bridge per episode.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from ..core.mcp_types import JsonRpcCode, ListToolsObservation
from ..server.jsonrpc import McpHandler, rpc_error, rpc_result
from ..server.mcp_streamable import SESSION_HEADER, initialize_result, tool_error_as_result
from .loop_server import LoopServer


class ToolBridge:
    """Serve ``env``'s tools at ``{url}/mcp``; ``renames`` maps served name -> env tool name."""

    def __init__(self, env: Any, renames: dict[str, str] | None = None) -> None:
        self.env = env
        self.renames = dict(renames or {})
        self._served = {orig: new for new, orig in self.renames.items()}
        self.calls = 0
        app = FastAPI(title="harness tool bridge")
        app.add_api_route("/mcp", self._post, methods=["POST"])
        app.add_api_route("/mcp", self._other, methods=["GET", "DELETE"])
        self._server = LoopServer(app)
        self.url: str | None = None

    async def start(self) -> str:
        """Start serving; returns the MCP endpoint URL (``.../mcp``)."""
        self.url = await self._server.start() + "/mcp"
        return self.url

    async def stop(self) -> None:
        await self._server.stop()

    async def _other(self, request: Request) -> Response:
        return Response(status_code=204 if request.method == "DELETE" else 405)

    async def _post(self, request: Request) -> Response:
        try:
            req = json.loads(await request.body())
        except ValueError:
            return JSONResponse(rpc_error(JsonRpcCode.PARSE_ERROR))
        if not isinstance(req, dict) or not isinstance(req.get("method"), str):
            return JSONResponse(
                rpc_error(JsonRpcCode.INVALID_REQUEST, "expected a JSON-RPC request")
            )
        if "id" not in req:
            return Response(status_code=202)  # notifications need no reply
        method, rid, params = req["method"], req["id"], req.get("params") or {}
        if method == "initialize":
            asked = str(params.get("protocolVersion", ""))
            result = initialize_result(asked, type(self.env).__name__, "Tools of your environment.")
            return JSONResponse(rpc_result(result, rid), headers={SESSION_HEADER: uuid.uuid4().hex})
        if method == "ping":
            return JSONResponse(rpc_result({}, rid))
        if method == "tools/list":
            obs = ListToolsObservation(tools=await self.env.list_tools_async())
            reply = McpHandler._tool_reply("tools/list", obs, rid)
            for tool in reply.get("result", {}).get("tools", []):
                tool["name"] = self._served.get(tool["name"], tool["name"])
            return JSONResponse(reply)
        if method == "tools/call" and isinstance(params.get("name"), str):
            name = self.renames.get(params["name"], params["name"])
            self.calls += 1
            obs = await self.env.call_tool(name, params.get("arguments") or {})
            return JSONResponse(
                tool_error_as_result(McpHandler._tool_reply("tools/call", obs, rid))
            )
        return JSONResponse(
            rpc_error(JsonRpcCode.METHOD_NOT_FOUND, f"Method not found: {method}", rid)
        )
