"""JSON-RPC 2.0 for ``POST /mcp`` and ``{"type": "mcp"}`` frames on ``/ws``.

Methods (as OpenEnv 0.10): ``tools/list``, ``tools/call`` (optional ``session_id``; without one
the call runs on a throw-away env), ``openenv/session/create``, ``openenv/session/close``.

On ``/mcp`` (HTTP and WebSocket) an ``MCPEnvironment``'s tools are called directly, as OpenEnv
does: no step is counted, no ``on_tool_result`` reward, and a session-less call needs no
``reset``. ``{"type": "mcp"}`` frames on ``/ws`` go through the env's ``step`` instead, so a
training episode's step counts and rewards see every tool call (our deliberate difference).
Envs that are not ``MCPEnvironment`` but take the MCP actions are always reached through
``step``.
"""

from __future__ import annotations

import logging
from typing import Any

from ..core.mcp_types import (
    JSONRPC_MESSAGES,
    MCP_ACTION_TYPES,
    CallToolAction,
    CallToolObservation,
    JsonRpcCode,
    ListToolsAction,
    ListToolsObservation,
    ToolErrorType,
)
from ..core.models import Action
from ..core.wire import dumps
from .calls import build_env, calls_for
from .encoding import bounded_text
from .mcp_environment import MCPEnvironment
from .sessions import FactoryError, Session, SessionManager, SessionRefused

log = logging.getLogger("openenv_train.server")

_REQUEST_KEYS = frozenset({"jsonrpc", "method", "params", "id"})


def rpc_error(
    code: int, message: str | None = None, req_id: Any = None, data: Any = None
) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message or JSONRPC_MESSAGES.get(code, "")}
    err["data"] = data
    return {"jsonrpc": "2.0", "id": req_id, "error": err}


def rpc_result(result: Any, req_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": req_id, "result": result}


def tool_result(obs: CallToolObservation) -> dict[str, Any]:
    """An MCP ``CallToolResult``; ``data`` carries the raw value (OpenEnv's client reads it)."""
    value = obs.result
    if _is_fastmcp_result(value):
        return _fastmcp_result(value, obs)
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    text = value if isinstance(value, str) else _to_text(value)
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"result": value},
        "isError": False,
        "data": value,
        "_meta": {"reward": obs.reward, "done": obs.done},
    }


def _to_text(value: Any) -> str:
    return dumps(value)


def _is_fastmcp_result(value: Any) -> bool:
    return hasattr(value, "content") and hasattr(value, "is_error") and hasattr(value, "data")


def _fastmcp_result(value: Any, obs: CallToolObservation) -> dict[str, Any]:
    """A FastMCP client's ``CallToolResult`` (a FastMCP-declared tool's answer) on the wire."""
    from pydantic_core import to_jsonable_python

    content = [to_jsonable_python(c, fallback=str) for c in value.content]
    return {
        "content": content,
        "structuredContent": to_jsonable_python(value.structured_content, fallback=str),
        "isError": bool(value.is_error),
        "data": to_jsonable_python(value.data, fallback=str),
        "_meta": {"reward": obs.reward, "done": obs.done},
    }


class McpHandler:
    """Dispatches one JSON-RPC request against a session env or a throw-away env."""

    def __init__(self, manager: SessionManager, action_cls: type[Action]) -> None:
        self.manager = manager
        self.mcp_actions = action_cls is Action or action_cls in MCP_ACTION_TYPES.values()

    async def handle(
        self,
        req: Any,
        ws_session: Session | None = None,
        client: str | None = None,
        *,
        direct: bool = True,
    ) -> dict[str, Any]:
        """Answer one request; ``client`` (the peer address) is charged for sessions it creates.

        ``direct``: call an ``MCPEnvironment``'s tools without a step (``/mcp``); False routes
        them through ``step`` (``/ws`` frames)."""
        if not isinstance(req, dict):
            return rpc_error(JsonRpcCode.INVALID_REQUEST, "Invalid request: expected a JSON object")
        req_id = req.get("id")
        if (
            not isinstance(req_id, (str, int, type(None)))
            or isinstance(req_id, bool)
            or (isinstance(req_id, str) and len(req_id) > 256)
            or (isinstance(req_id, int) and abs(req_id) > 2**63)
        ):
            return rpc_error(
                JsonRpcCode.INVALID_REQUEST,
                "Invalid request: 'id' must be a string of at most 256 characters, a 64-bit "
                "integer or null",
            )
        if req.get("jsonrpc") != "2.0":
            return rpc_error(
                JsonRpcCode.INVALID_REQUEST, "Invalid request: 'jsonrpc' must be \"2.0\"", req_id
            )
        method = req.get("method")
        if not isinstance(method, str):
            return rpc_error(
                JsonRpcCode.INVALID_REQUEST, "Invalid request: 'method' must be a string", req_id
            )
        extra = set(req) - _REQUEST_KEYS
        if extra:
            return rpc_error(
                JsonRpcCode.INVALID_REQUEST,
                f"Invalid request: unknown field(s) {[bounded_text(k) for k in sorted(extra)[:10]]}; "
                "allowed: jsonrpc, method, params, id",
                req_id,
            )
        params = req.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return rpc_error(JsonRpcCode.INVALID_PARAMS, "Params must be an object", req_id)
        try:
            if method == "openenv/session/create":
                return await self._session_create(req_id, ws_session, client)
            if method == "openenv/session/close":
                return await self._session_close(params, req_id, ws_session)
            if method in ("tools/list", "tools/call"):
                return await self._tools(method, params, req_id, ws_session, direct)
            return rpc_error(
                JsonRpcCode.METHOD_NOT_FOUND, f"Method not found: {bounded_text(method)}", req_id
            )
        except Exception as exc:
            log.exception("MCP %s failed", bounded_text(method))
            return rpc_error(
                JsonRpcCode.INTERNAL_ERROR,
                bounded_text(f"{type(exc).__name__}: {exc}", 2000),
                req_id,
            )

    async def _session_create(
        self, req_id: Any, ws_session: Session | None, client: str | None
    ) -> dict[str, Any]:
        if ws_session is not None:
            return rpc_result({"session_id": ws_session.id}, req_id)
        try:
            session = await self.manager.create("http", client)
        except SessionRefused as exc:
            data = exc.rpc_data()
            return rpc_error(JsonRpcCode.SERVER_ERROR, str(exc), req_id, data)
        except FactoryError as exc:
            return rpc_error(
                JsonRpcCode.SERVER_ERROR, str(exc), req_id, {"factory_name": exc.factory_name}
            )
        return rpc_result({"session_id": session.id}, req_id)

    async def _session_close(
        self, params: dict, req_id: Any, ws_session: Session | None
    ) -> dict[str, Any]:
        sid = params.get("session_id")
        if not sid or not isinstance(sid, str):
            return rpc_error(
                JsonRpcCode.INVALID_PARAMS, "Invalid params - 'session_id' is required", req_id
            )
        if ws_session is not None and sid == ws_session.id:
            return rpc_error(
                JsonRpcCode.INVALID_REQUEST,
                'Cannot close the active WebSocket session via MCP; send {"type": "close"}',
                req_id,
            )
        session = self.manager.get(sid)
        if session is None:
            return rpc_error(
                JsonRpcCode.INVALID_PARAMS, f"Unknown session_id: {bounded_text(sid)}", req_id
            )
        if session.attached:
            session.pending_close = True
            return rpc_result({"session_id": sid, "closed": False, "closing": True}, req_id)
        async with session.lock:  # calls running or queued on the session finish first (FIFO)
            await self.manager.destroy(session)
        return rpc_result({"session_id": sid, "closed": True}, req_id)

    async def _tools(
        self,
        method: str,
        params: dict,
        req_id: Any,
        ws_session: Session | None,
        direct: bool = True,
    ) -> dict[str, Any]:
        if method == "tools/call":
            name = params.get("name")
            if not name or not isinstance(name, str):
                return rpc_error(JsonRpcCode.INVALID_PARAMS, "Missing 'name' in params", req_id)
            arguments = params.get("arguments") or {}
            if not isinstance(arguments, dict):
                return rpc_error(
                    JsonRpcCode.INVALID_PARAMS,
                    "'arguments' must be an object of tool arguments",
                    req_id,
                )
            action: Action = CallToolAction(tool_name=name, arguments=arguments)
        else:
            action = ListToolsAction()

        session = ws_session
        if session is None and params.get("session_id"):
            session = self.manager.get(str(params["session_id"]))
            if session is None:
                return rpc_error(
                    JsonRpcCode.INVALID_PARAMS,
                    f"Unknown session_id: {bounded_text(str(params['session_id']))}",
                    req_id,
                )
        if session is not None:
            if not self._supports_mcp(session.env):
                return rpc_error(
                    JsonRpcCode.INTERNAL_ERROR, "Environment does not support MCP", req_id
                )
            if session is ws_session:  # the /ws frame handler already holds the session lock
                obs = await _run(session.env, action, direct)
            else:
                start = session.enter()
                try:
                    async with session.lock:
                        if session.closed:  # a close got the session first
                            return rpc_error(
                                JsonRpcCode.INVALID_PARAMS,
                                f"Session {bounded_text(session.id)} was closed while this "
                                "request waited for it; start a new session",
                                req_id,
                            )
                        obs = await _run(session.env, action, direct)
                finally:
                    session.leave(start)
        else:
            env = await build_env(self.manager.env_factory)
            try:
                if not self._supports_mcp(env):
                    return rpc_error(
                        JsonRpcCode.INTERNAL_ERROR, "Environment does not support MCP", req_id
                    )
                obs = await _run(env, action, direct)
            finally:
                try:
                    await calls_for(env).close(env)
                except Exception:
                    log.exception("env.close() raised")
        return self._tool_reply(method, obs, req_id)

    def _supports_mcp(self, env: Any) -> bool:
        return isinstance(env, MCPEnvironment) or self.mcp_actions

    @staticmethod
    def _tool_reply(method: str, obs: Any, req_id: Any) -> dict[str, Any]:
        if method == "tools/list":
            if not isinstance(obs, ListToolsObservation):
                return rpc_error(
                    JsonRpcCode.INTERNAL_ERROR,
                    f"tools/list step returned {type(obs).__name__}, expected ListToolsObservation",
                    req_id,
                )
            tools = [
                {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                for t in obs.tools
            ]
            return rpc_result({"tools": tools}, req_id)
        if not isinstance(obs, CallToolObservation):
            return rpc_error(
                JsonRpcCode.INTERNAL_ERROR,
                f"tools/call step returned {type(obs).__name__}, expected CallToolObservation",
                req_id,
            )
        if obs.error is not None:
            code = (
                JsonRpcCode.INVALID_PARAMS
                if obs.error.error_type
                in (ToolErrorType.TOOL_NOT_FOUND, ToolErrorType.INVALID_ARGS)
                else JsonRpcCode.INTERNAL_ERROR
            )
            data = {"error_type": obs.error.error_type.value, "tool_name": obs.tool_name}
            return rpc_error(code, obs.error.message, req_id, data)
        return rpc_result(tool_result(obs), req_id)


async def _run(env: Any, action: Action, direct: bool) -> Any:
    """One MCP action on ``env``: the tool itself when ``direct`` (and the env is an
    ``MCPEnvironment``), else the env's ``step``."""
    if direct and isinstance(env, MCPEnvironment):
        if isinstance(action, ListToolsAction):
            return ListToolsObservation(tools=await env.list_tools_async())
        assert isinstance(action, CallToolAction)
        return await env.invoke_tool(action.tool_name, action.arguments)
    return await calls_for(env).step(env, action)
