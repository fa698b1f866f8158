"""Tools declared on a FastMCP server, served by an ``MCPEnvironment`` (OpenEnv's style).

An env passes ``FastMCP(...)`` to ``MCPEnvironment.__init__``; this module lists its tools and
calls them through an in-memory FastMCP client session. The session is opened on first use and
held open for the env's life on that event loop, so FastMCP ``Context`` state
(``ctx.set_state``/``get_state``) lasts as long as the env session does. fastmcp is imported
only by envs that use it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..core.mcp_types import (
    RESERVED_TOOL_NAMES,
    CallToolObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from ._threads import run_coro_sync
from .encoding import bounded_text

#: OpenEnv's default deadline for one tool call, in seconds.
MCP_TOOL_CALL_TIMEOUT = 30.0


def server_tools(server: Any) -> dict[str, Any]:
    """The FastMCP server's tools by name (FastMCP 3 ``list_tools``; 2.x ``get_tools``)."""
    if hasattr(server, "list_tools"):
        return {t.name: t for t in run_coro_sync(server.list_tools())}
    tools = run_coro_sync(server.get_tools())
    return dict(tools)


def check_tool_names(server: Any) -> None:
    """Refuse a server that declares a reserved tool name (``ValueError``, as OpenEnv)."""
    clash = set(server_tools(server)) & RESERVED_TOOL_NAMES
    if clash:
        raise ValueError(
            f"MCP tools cannot use reserved names: {sorted(clash)}. Reserved names are: "
            f"{sorted(RESERVED_TOOL_NAMES)}; rename the tool (@mcp.tool(name=...))"
        )


def as_tool(server_tool: Any) -> Tool:
    schema = getattr(server_tool, "parameters", None) or getattr(server_tool, "inputSchema", None)
    return Tool(
        name=server_tool.name,
        description=server_tool.description or "",
        input_schema=dict(schema or {"type": "object", "properties": {}}),
    )


def _error_kind(message: str) -> ToolErrorType:
    low = message.lower()
    if "unknown tool" in low or "not found" in low:
        return ToolErrorType.TOOL_NOT_FOUND
    if "validation error" in low or "invalid" in low or "argument" in low:
        return ToolErrorType.INVALID_ARGS
    return ToolErrorType.EXECUTION_ERROR


def in_memory_client(server: Any) -> Any:
    """A FastMCP client of ``server`` in this process. FastMCP 4 negotiates the 2026-07-28
    protocol by default, where ``Context`` state lives for one request only: the classic
    handshake (``mode="legacy"``) keeps it for the session, as FastMCP 3 and OpenEnv do."""
    import inspect

    from fastmcp import Client

    if "mode" in inspect.signature(Client.__init__).parameters:
        return Client(server, mode="legacy")
    return Client(server)


class FastMCPSession:
    """One env's client session to its FastMCP server, held open on the loop that first uses it.

    Calls from another loop (in-process sync ``step`` runs a loop of its own) open a session of
    their own for that call.
    """

    def __init__(self, server: Any) -> None:
        self.server = server
        self.client = in_memory_client(server)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._holder: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None

    async def _hold(self) -> None:
        assert self._ready is not None and self._stop is not None
        try:
            async with self.client:
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:
            self._error = exc
        finally:
            self._ready.set()

    async def _held_client(self) -> Any | None:
        """The held session's client on this loop, or None when it lives on another loop."""
        loop = asyncio.get_running_loop()
        if self._holder is None:
            self._loop, self._ready, self._stop = loop, asyncio.Event(), asyncio.Event()
            self._holder = loop.create_task(self._hold(), name="fastmcp-session")
        if self._loop is not loop:
            return None
        assert self._ready is not None
        await self._ready.wait()
        if self._error is not None or self._holder.done():
            raise RuntimeError(f"the FastMCP session is closed ({self._error!r})")
        return self.client

    async def list_tools(self) -> list[Tool]:
        return [as_tool(t) for t in await self.server.list_tools()]

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        timeout_s: float | None = None,
        *,
        hold: bool = True,
    ) -> CallToolObservation:
        """Call one tool; every failure comes back as a ``ToolError`` in the observation.

        ``hold=False`` (a one-off loop, such as a sync in-process ``step``) uses a session of its
        own for this call instead of holding one open on a loop that is about to end.
        """
        timeout = timeout_s if timeout_s is not None else MCP_TOOL_CALL_TIMEOUT
        try:
            client = await self._held_client() if hold else None
            if client is not None:
                result = await asyncio.wait_for(
                    client.call_tool(name, arguments, raise_on_error=False), timeout
                )
            else:
                result = await asyncio.wait_for(self._one_shot(name, arguments), timeout)
        except asyncio.TimeoutError:
            message = f"Tool {name!r} timed out after {timeout} seconds"
            return _failed(name, ToolErrorType.TIMEOUT, message)
        except Exception as exc:
            message = f"{type(exc).__name__}: {exc}"
            return _failed(name, _error_kind(message), message)
        if result.is_error:
            texts = [getattr(c, "text", "") for c in result.content]
            message = "\n".join(t for t in texts if t) or f"Tool {name!r} failed"
            return _failed(name, _error_kind(message), message)
        return CallToolObservation(tool_name=name, result=result)

    async def _one_shot(self, name: str, arguments: dict[str, Any]) -> Any:
        async with in_memory_client(self.server) as client:
            return await client.call_tool(name, arguments, raise_on_error=False)

    def close(self) -> None:
        """End the held session (from any thread); the holder task then leaves its loop."""
        loop, stop = self._loop, self._stop
        if loop is None or stop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            stop.set()
        else:
            loop.call_soon_threadsafe(stop.set)


def _failed(name: str, kind: ToolErrorType, message: str) -> CallToolObservation:
    return CallToolObservation(
        tool_name=name, error=ToolError(error_type=kind, message=bounded_text(message, 2000))
    )
