"""``MCPToolClient``: list and call an env's MCP tools over ``/ws`` (simulation) or ``/mcp`` (production)."""

from __future__ import annotations

from typing import Any

from ..core.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from ..core.models import Action, Observation, StepResult
from .env_client import EnvClient
from .errors import ToolCallError as ToolCallError
from .generic import GenericObservation
from .mcp_http import JsonRpcCallError, McpHttpSession, mcp_url

MCP_MODES = ("simulation", "production")


def _tool(data: dict[str, Any]) -> Tool:
    schema = data.get("input_schema", data.get("inputSchema"))
    return Tool(
        name=str(data.get("name", "")),
        description=data.get("description") or "",
        input_schema=schema if isinstance(schema, dict) else {"type": "object", "properties": {}},
    )


def unwrap_tool_result(result: Any) -> Any:
    """A tool's value from a ``CallToolObservation.result``; the one unwrapper every caller uses.

    FastMCP servers (OpenEnv's) send a ``CallToolResult`` dict (``content``, ``data``,
    ``structured_content``): its ``data``, else the structured result, else the joined text
    (``None`` when there is none). Anything else (our servers send the bare value) is returned
    as is.
    """
    if not (isinstance(result, dict) and "content" in result and "data" in result):
        return result
    if result.get("data") is not None:
        return result["data"]
    structured = result.get("structured_content") or result.get("structuredContent")
    if isinstance(structured, dict) and "result" in structured:
        return structured["result"]
    texts = [c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict)]
    return "".join(texts) if texts else None


class MCPToolClient(EnvClient[Action, Observation, Any]):
    """``await env.list_tools()``, ``await env.call_tool("echo_message", message="hi")``.

    ``mode="production"`` (the default, as in OpenEnv): calls are JSON-RPC ``tools/list`` /
    ``tools/call`` on HTTP ``POST /mcp`` in a session made with ``openenv/session/create``;
    ``reset``/``step`` then attach the WebSocket to that same session (``/ws?session_id=...``),
    so both transports reach one env instance, as OpenEnv 0.10 does. ``mode="simulation"``
    (OpenEnv's ``MCPToolClient`` refuses it): calls travel as
    ``step`` actions ``{"type": "list_tools"}`` / ``{"type": "call_tool", ...}`` on the
    session's WebSocket, so they count as steps and carry rewards.
    Non-tool observations (e.g. from ``reset``) parse with ``observation_cls``.
    """

    observation_cls = GenericObservation

    def __init__(
        self, base_url: str | None = None, *, mode: str = "production", **kwargs: Any
    ) -> None:
        """``mode``: ``"production"`` (tool calls over HTTP ``/mcp``) or ``"simulation"`` (tool
        calls as steps on ``/ws``); ``kwargs``: ``EnvClient``'s."""
        if not isinstance(mode, str) or mode.lower() not in MCP_MODES:
            raise ValueError(
                f"mode must be 'production' (tool calls over HTTP /mcp) or 'simulation' (tool "
                f"calls as steps on the session's WebSocket), got {mode!r}"
            )
        super().__init__(base_url, **kwargs)
        self.mode = mode.lower()
        self._http_mcp = McpHttpSession(
            self.base_url, timeout=self.timeout, token=self._token, headers=self.headers
        )
        self._plain_ws_url = self.ws_url
        self._tools_cache: list[Tool] | None = None

    async def _open(self) -> None:
        if self.mode == "production":  # share the HTTP session's env with reset/step
            self._http_mcp.url = mcp_url(self.base_url)
            self._plain_ws_url = self.ws_url.split("?", 1)[0]
            sid = await self._http_mcp.ensure()
            self.ws_url = f"{self._plain_ws_url}?session_id={sid}"
        await super()._open()

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            await self._http_mcp.close()

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[Observation]:
        data = payload.get("observation") or {}
        common = {
            "reward": payload.get("reward"),
            "done": bool(payload.get("done", False)),
            "metadata": data.get("metadata") or {},
        }
        obs: Observation
        if "tools" in data and isinstance(data["tools"], list):
            obs = ListToolsObservation(tools=[_tool(t) for t in data["tools"]], **common)
        elif "tool_name" in data:
            err = data.get("error")
            obs = CallToolObservation(
                tool_name=str(data["tool_name"]),
                result=data.get("result"),
                error=ToolError.model_validate(err) if err else None,
                **common,
            )
        else:
            return super()._parse_result(payload)
        return StepResult(
            observation=obs,
            reward=common["reward"],
            done=common["done"],
            metadata=payload.get("metadata") or {},
        )

    async def list_tools(self, use_cache: bool = True) -> list[Tool]:
        """The tools this session's env exposes (kept after the first call unless ``use_cache=False``)."""
        if use_cache and self._tools_cache is not None:
            return list(self._tools_cache)
        self._tools_cache = await self._list_tools()
        return list(self._tools_cache)

    async def get_tool(self, name: str) -> Tool | None:
        """The tool called ``name``, or ``None`` if the env has no such tool."""
        return next((t for t in await self.list_tools() if t.name == name), None)

    async def has_tool(self, name: str) -> bool:
        """Whether the env has a tool called ``name``."""
        return await self.get_tool(name) is not None

    async def _list_tools(self) -> list[Tool]:
        if self.mode == "production":
            try:
                return [_tool(t) for t in await self._http_mcp.list_tools()]
            except JsonRpcCallError as exc:
                raise ToolCallError("list_tools", "jsonrpc_error", exc.message) from exc
        obs = (await self.step(ListToolsAction())).observation
        if not isinstance(obs, ListToolsObservation):
            raise ToolCallError("list_tools", "unexpected_observation", f"got {type(obs).__name__}")
        if not obs.tools and obs.metadata.get("error"):
            raise ToolCallError(
                "list_tools",
                str(obs.metadata.get("error_type", "error")),
                str(obs.metadata["error"]),
            )
        return obs.tools

    async def call_tool(self, name: str, **arguments: Any) -> Any:
        """Call tool ``name``; returns its result or raises ``ToolCallError``."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"call_tool(name=...) must be a non-empty tool name, got {name!r}")
        if self.mode == "production":
            try:
                return unwrap_tool_result(await self._http_mcp.call_tool(name, arguments))
            except JsonRpcCallError as exc:
                data = exc.data if isinstance(exc.data, dict) else {}
                raise ToolCallError(
                    name, data.get("error_type", "jsonrpc_error"), exc.message
                ) from exc
        obs = (await self.step(CallToolAction(tool_name=name, arguments=arguments))).observation
        if not isinstance(obs, CallToolObservation):
            raise ToolCallError(name, "unexpected_observation", f"got {type(obs).__name__}")
        if obs.error is not None:
            raise ToolCallError(name, obs.error.error_type, obs.error.message)
        if isinstance(obs.result, dict) and obs.result.get("is_error"):
            raise ToolCallError(
                name,
                ToolErrorType.EXECUTION_ERROR,
                str(unwrap_tool_result({**obs.result, "data": None})),
            )
        return unwrap_tool_result(obs.result)
