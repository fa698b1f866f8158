"""Production-mode MCP transport: JSON-RPC over HTTP ``POST /mcp`` on one server-side session.

``openenv/session/create`` gives a session id (one env instance on the server); ``tools/list``
and ``tools/call`` carry it; ``close()`` sends ``openenv/session/close``. This is the transport
OpenEnv 0.10's ``MCPToolClient`` uses in production mode, so a server that removes the HTTP
simulation routes still serves tools.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from ..core.auth import client_token
from .errors import JsonRpcCallError as JsonRpcCallError
from .errors import McpHttpError as McpHttpError
from .trace_context import current_traceparent


def mcp_url(base_url: str) -> str:
    """``http://h:p[/prefix]`` (or ``ws://``) -> ``http://h:p[/prefix]/mcp``."""
    parts = urlsplit(base_url.strip().rstrip("/"))
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    path = parts.path[: -len("/ws")] if parts.path.endswith("/ws") else parts.path
    return urlunsplit((scheme, parts.netloc, path.rstrip("/") + "/mcp", "", ""))


class McpHttpSession:
    """One ``openenv/session/create`` session, created on first use, closed by :meth:`close`.
    ``token``: the server's bearer token (default as ``EnvClient``'s: ``core.auth.client_token``).
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float | None = 30.0,
        token: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.url = mcp_url(base_url)
        token = client_token(self.url[: -len("/mcp")], token)
        self.headers = dict(headers or {})
        if token and "Authorization" not in self.headers:
            self.headers["Authorization"] = f"Bearer {token}"
        self.session_id: str | None = None
        self.timeout = timeout
        self._http: httpx.AsyncClient | None = None  # made on first use, again after close()
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send one JSON-RPC request; return ``result`` or raise :class:`JsonRpcCallError`."""
        body = {"jsonrpc": "2.0", "method": method, "params": params or {}, "id": next(self._ids)}
        if self._http is None:
            self._http = httpx.AsyncClient(
                timeout=self.timeout, trust_env=False, headers=self.headers
            )
        try:
            parent = current_traceparent()  # W3C trace context, while a span is current
            headers = {"traceparent": parent} if parent is not None else None
            response = await self._http.post(self.url, json=body, headers=headers)
            reply = response.json()
        except (httpx.HTTPError, ValueError) as exc:  # some (ReadError) have an empty message
            why = str(exc) or "no reply (the connection closed)"
            raise McpHttpError(
                f"POST {self.url} ({method}) failed: {type(exc).__name__}: {why}"
            ) from exc
        if response.status_code >= 400 and isinstance(reply, dict) and "detail" in reply:
            detail = reply["detail"]  # the server's gate refused it (token, size, deadline)
            text = detail.get("message", detail) if isinstance(detail, dict) else detail
            raise McpHttpError(f"POST {self.url} ({method}): HTTP {response.status_code}: {text}")
        if not isinstance(reply, dict) or ("result" not in reply and "error" not in reply):
            raise McpHttpError(f"POST {self.url} ({method}) did not answer JSON-RPC: {reply!r}")
        if "error" in reply:
            err = reply["error"] or {}
            raise JsonRpcCallError(
                int(err.get("code", 0)), str(err.get("message")), err.get("data")
            )
        return reply["result"]

    async def ensure(self) -> str:
        """The session id, creating the server-side session once."""
        async with self._lock:
            if self.session_id is None:
                result = await self.request("openenv/session/create")
                self.session_id = str(result["session_id"])
            return self.session_id

    async def list_tools(self) -> list[dict[str, Any]]:
        result = await self.request("tools/list", {"session_id": await self.ensure()})
        return list(result.get("tools") or [])

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        params = {"name": name, "arguments": arguments, "session_id": await self.ensure()}
        return await self.request("tools/call", params)

    async def close(self) -> None:
        """Close the server-side session (if any) and the HTTP client; idempotent."""
        sid, self.session_id = self.session_id, None
        try:
            if sid is not None:
                try:
                    await self.request("openenv/session/close", {"session_id": sid})
                except (JsonRpcCallError, McpHttpError):
                    pass  # already gone (reaped, server stopped): nothing left to free
        finally:
            http, self._http = self._http, None
            if http is not None:
                await http.aclose()
