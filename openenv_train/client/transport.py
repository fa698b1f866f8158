"""How one env session's frames reach the server: the ``Transport`` interface and its WebSocket.

``EnvClient`` speaks the protocol (frames, replies, errors); a transport only carries text:
``request(frame, timeout)`` sends one request frame and returns the reply, ``abort()`` drops
the session at once (a late reply must never answer a later call), ``close()`` ends it politely.
Two transports exist: :class:`WebSocketTransport` (standard frames, one WebSocket per session)
and ``batch.BatchTransport`` (many sessions multiplexed on one connection). Both open through
:class:`WebSocketOptions`, the one place a handshake is made and its failures are named.

The hot path is one ``send`` and one ``recv`` per request, no task spawned (``asyncio.timeout``
instead of ``wait_for`` on 3.11+).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.frames import Close
from websockets.protocol import State as WsState

from ..core import wire
from ..core.auth import HideAuthorization
from ..core.errors import CapacityReachedError, RequestTimeoutError
from ..core.loopback import is_loopback
from .errors import ServerUnreachableError as ServerUnreachableError
from .trace_context import current_traceparent

_timeout: Callable[[float | None], Any] | None = getattr(asyncio, "timeout", None)
_CLOSE_TEXT = json.dumps(wire.CLOSE_FRAME)

_WS_LOG = logging.getLogger("websockets.client.openenv_train")
_WS_LOG.addFilter(HideAuthorization())


class Transport(Protocol):
    """What carries one session's frames. A reply is a JSON text (or, on the batch channel,
    the already decoded frame). ``request`` raises ``asyncio.TimeoutError`` past ``timeout``,
    ``ConnectionClosed``/``OSError`` when the socket fails, ``ConnectionLostError`` when a
    shared channel died."""

    url: str

    @property
    def usable(self) -> bool:
        """False once the server (or the shared channel) closed the session."""
        ...

    @property
    def closed_reason(self) -> str:
        """Why the session is not usable (for error messages)."""
        ...

    async def request(self, text: str, timeout: float | None) -> str | bytes | dict[str, Any]: ...

    def abort(self) -> None:
        """Drop the session now, without waiting for anything."""
        ...

    async def close(self) -> None:
        """End the session politely (a ``close`` frame), then free the connection."""
        ...


def to_ws_url(base_url: str) -> str:
    """``http://h:p[/prefix]`` -> ``ws://h:p[/prefix]/ws`` (``ws://``/``wss://`` and a ``/ws`` suffix kept)."""
    if not isinstance(base_url, str) or not base_url.strip():
        raise ValueError(f"base_url must be a URL like 'http://127.0.0.1:8000', got {base_url!r}")
    url = base_url.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme)
    if scheme is None or not parts.netloc:
        raise ValueError(
            f"base_url must start with http://, https://, ws:// or wss:// and name a host, got {base_url!r}"
        )
    path = parts.path if parts.path.endswith("/ws") else parts.path + "/ws"
    return urlunsplit((scheme, parts.netloc, path, parts.query, ""))


@dataclass(frozen=True)
class WebSocketOptions:
    """How to open a WebSocket to an env server: the URL and the handshake's settings.

    ``connect_timeout``: seconds for the handshake; ``max_message_size``: bytes (None: no
    limit); ``ping_interval``/``ping_timeout``: keepalive (None: off); ``headers``: the
    handshake's extra headers; ``token``: the server's bearer token.
    """

    url: str
    connect_timeout: float = 10.0
    max_message_size: int | None = 64 * 1024 * 1024
    ping_interval: float | None = None
    ping_timeout: float | None = 20.0
    headers: Mapping[str, str] = field(default_factory=dict)
    token: str | None = None

    @property
    def loopback(self) -> bool:
        host = urlsplit(self.url).hostname or ""
        return is_loopback(host)

    async def open(self, **extra: Any) -> ClientConnection:
        """Open a WebSocket to ``url``; ``extra`` goes to ``websockets``' ``connect``
        (``subprotocols=``). Errors say what failed and the fix."""
        kwargs: dict[str, Any] = {
            "compression": None,
            "open_timeout": self.connect_timeout,
            "max_size": self.max_message_size,
            "ping_interval": self.ping_interval,
            "ping_timeout": self.ping_timeout,
            "close_timeout": 2.0,
            "user_agent_header": None,
        }
        if self.loopback:
            kwargs["proxy"] = None
        headers = dict(self.headers)
        if self.token is not None:
            headers["Authorization"] = "Bearer " + self.token
        parent = current_traceparent()
        if parent is not None:  # W3C trace context on the handshake (a one-session connection)
            headers["traceparent"] = parent
        if headers:
            kwargs["additional_headers"] = headers
        if "Authorization" in headers:
            kwargs["logger"] = _WS_LOG
        kwargs.update(extra)
        try:
            return await ws_connect(self.url, **kwargs)
        except InvalidStatus as e:
            status = e.response.status_code
            msg = f"{self.url} refused the WebSocket handshake with HTTP {status}"
            if status in (429, 503):
                raise CapacityReachedError(msg, data={"http_status": status}) from e
            if status in (401, 403):
                hint = "was refused" if self.token else "is missing"
                raise ServerUnreachableError(
                    f"{msg}: the access token {hint}; pass token=... or set OPENENV_TRAIN_TOKEN "
                    "(or OPENENV_TRAIN_TOKEN_FILE) to the server's token"
                ) from e
            raise ServerUnreachableError(f"{msg}; is this an env server base_url?") from e
        except (TimeoutError, asyncio.TimeoutError) as e:
            raise RequestTimeoutError(
                f"opening a session at {self.url} took longer than connect_timeout={self.connect_timeout}s"
            ) from e
        except (OSError, InvalidHandshake) as e:
            raise ServerUnreachableError(
                f"could not open a session at {self.url}: {e}; is the env server running at that address?"
            ) from e


class WebSocketTransport:
    """One session on its own WebSocket: standard frames, replies matched by order."""

    __slots__ = ("url", "ws")

    def __init__(self, ws: ClientConnection, url: str) -> None:
        self.ws = ws
        self.url = url

    @classmethod
    async def open(cls, options: WebSocketOptions) -> WebSocketTransport:
        return cls(await options.open(), options.url)

    @property
    def usable(self) -> bool:
        return self.ws.state is WsState.OPEN

    @property
    def closed_reason(self) -> str:
        # the close frame received, not ``ws.close_code``: that stays None until the TCP
        # connection is gone too, so a session closed a moment ago read as "no close frame"
        return describe_close(self.ws.protocol.close_rcvd)

    async def request(self, text: str, timeout: float | None) -> str | bytes:
        ws = self.ws
        try:
            await ws.send(text)
        except ConnectionClosed:
            pass  # a refusing server sends an error frame then closes: read it below
        if _timeout is not None:
            async with _timeout(timeout):
                return await ws.recv()
        return await asyncio.wait_for(ws.recv(), timeout)  # Python 3.10

    def abort(self) -> None:
        self.ws.transport.abort()

    async def close(self) -> None:
        ws = self.ws
        try:
            await ws.send(_CLOSE_TEXT)
            await ws.close()
        except (ConnectionClosed, OSError):
            pass
        except BaseException:
            ws.transport.abort()
            raise


def close_text(e: ConnectionClosed) -> str:
    """What a ``ConnectionClosed`` says about the close, for error messages."""
    return describe_close(e.rcvd)


def describe_close(rcvd: Close | None) -> str:
    """The close frame the server sent (``None``: none came), for error messages."""
    if rcvd is None:
        return "no close frame: the server went away or the TCP connection was reset"
    return f"close code {rcvd.code}{': ' + rcvd.reason if rcvd.reason else ''}"
