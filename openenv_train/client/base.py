"""``EnvClient``: one WebSocket connection to ``/ws`` is one env session.

The protocol has no request ids: a reply is matched to a request only by order. So a client
never lets two requests overlap, and a request that times out or is cancelled drops the
connection at once; a late reply then can never be read as the answer to a later call
(OpenEnv issue #1143). Later calls raise ``SessionClosedError`` until ``reset()`` opens a
fresh session.

The hot path is one ``send`` and one ``recv`` per call, one JSON encode and one decode, no
task spawned (``asyncio.timeout`` instead of ``wait_for`` on 3.11+).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.protocol import State as WsState

from ..core import wire
from ..core.auth import HideAuthorization, client_token
from ..core.errors import (
    CapacityReachedError,
    ConnectionLostError,
    InfrastructureError,
    OpenEnvTrainError,
    RequestTimeoutError,
    RequestTooLargeError,
    SessionClosedError,
    error_from_frame,
)
from ..core.models import Action, ActT, Observation, ObsT, State, StateT, StepResult
from . import compat
from .batch import BatchSession
from .batch import open_session as open_batch_session

if TYPE_CHECKING:
    from .bootstrap import ClientBootstrap
    from .sync import SyncEnvClient

_timeout: Callable[[float | None], Any] | None = getattr(asyncio, "timeout", None)
_STATE_TEXT = json.dumps(wire.STATE_FRAME)
_CLOSE_TEXT = json.dumps(wire.CLOSE_FRAME)
_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}

ClientT = TypeVar("ClientT", bound="EnvClient[Any, Any, Any]")


_WS_LOG = logging.getLogger("websockets.client.openenv_train")
_WS_LOG.addFilter(HideAuthorization())


class UnexpectedFrameError(InfrastructureError):
    """The server answered with a frame that is not the reply the protocol promises."""


class ServerUnreachableError(ConnectionLostError):
    """No WebSocket session could be opened (nothing listening, refused handshake, bad URL)."""


class ServerProvider(Protocol):
    """What ``from_provider`` needs: a server someone can start and stop.

    This is the client's only hook into runtimes: the client never imports one. Every provider
    of ``openenv_train.runtime`` fits (``LocalProcessProvider`` for a local process).
    """

    @property
    def base_url(self) -> str | None: ...

    def start(self) -> str: ...

    def stop(self) -> None: ...


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


class EnvClient(Generic[ActT, ObsT, StateT]):
    """Async client for one env session. Subclass with three class attributes for a typed env::

        class BlackjackEnv(EnvClient[BlackjackAction, BlackjackObservation, BlackjackState]):
            action_cls, observation_cls, state_cls = BlackjackAction, BlackjackObservation, BlackjackState

    Use one client per concurrent session: requests on one client never overlap. ``token``: the
    server's bearer token (default: the token of a server this process started with one of its
    own, e.g. one of several containers, else ``OPENENV_TRAIN_TOKEN`` /
    ``OPENENV_TRAIN_TOKEN_FILE``).
    """

    action_cls: ClassVar[type[Action]] = Action
    observation_cls: ClassVar[type[Observation]] = Observation
    state_cls: ClassVar[type[State]] = State
    #: Share one connection per server and event loop with the other batching clients, and send
    #: the frames of one loop turn as one message, when the server offers the batch extension
    #: (``openenv_train.client.batch``); otherwise, or when False, one connection per session.
    #: The rollout engine's pool turns it on; set it on an instance before ``connect()``.
    batch_frames: bool = False

    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout: float | None = 30.0,
        connect_timeout: float = 10.0,
        max_message_size: int | None = 64 * 1024 * 1024,
        ping_interval: float | None = None,
        token: str | None = None,
        mode: str | None = None,
        headers: Mapping[str, str] | None = None,
        provider: ServerProvider | None = None,
        **openenv_names: Any,
    ) -> None:
        """``timeout``: seconds to wait for each reply (then the connection is dropped);
        ``connect_timeout``: seconds to open the session; ``max_message_size``: bytes;
        ``ping_interval``: keepalive pings (None: off); ``token``: the server's bearer token;
        ``headers``: extra handshake headers; ``provider``: a server to start on ``connect()``
        and stop on ``close()``. ``mode``: ``'simulation'`` or ``'production'`` (case-insensitive;
        default: the ``OPENENV_CLIENT_MODE`` variable, else the class's ``default_mode``).
        OpenEnv's names are accepted too: ``connect_timeout_s``, ``message_timeout_s``,
        ``max_message_size_mb``, ``websocket_ping_interval_s``, ``websocket_ping_timeout_s``.
        """
        # OpenEnv's argument names (connect_timeout_s=, message_timeout_s=, ...) map onto ours
        ours = compat.client_kwargs(
            openenv_names,
            timeout=timeout,
            connect_timeout=connect_timeout,
            max_message_size=max_message_size,
            ping_interval=ping_interval,
        )
        timeout, connect_timeout = ours["timeout"], ours["connect_timeout"]
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ValueError(
                f"timeout must be a positive number of seconds or None, got {timeout!r}"
            )
        if not (isinstance(connect_timeout, (int, float)) and connect_timeout > 0):
            raise ValueError(
                f"connect_timeout must be a positive number of seconds, got {connect_timeout!r}"
            )
        if base_url is None:
            if provider is None:
                raise ValueError("give base_url='http://host:port' (or provider=... to start one)")
            base_url = provider.base_url or "http://127.0.0.1:0"  # set when connect() starts it
        self._mode = compat.client_mode(mode, type(self).default_mode)
        self.base_url = base_url.strip().rstrip("/") if isinstance(base_url, str) else base_url
        self.ws_url = to_ws_url(base_url)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_message_size = ours["max_message_size"]
        self.ping_interval = ours["ping_interval"]
        self.ping_timeout = ours["ping_timeout"]
        self.headers = compat.check_headers(headers)
        self._token = client_token(self.base_url, token)
        self._ws: ClientConnection | None = None
        self._mux: BatchSession | None = None  # the session, when it rides a batch channel
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lost: str | None = None  # why the last session ended; None while usable
        self._final: str | None = None  # set when close() also stopped the server
        self._busy = False
        self._provider: ServerProvider | None = None
        self._start_provider: ServerProvider | None = (
            None  # EnvClient(provider=...): started on connect
        )
        if provider is not None and provider.base_url is None:
            self._start_provider = provider
        elif provider is not None:
            self._provider = provider
        cls = type(self)
        self._fast_step = cls._step_payload is EnvClient._step_payload
        host = urlsplit(self.ws_url).hostname or ""
        self._loopback = host in _LOOPBACK or host.startswith("127.")

    #: the ``mode`` used when neither ``mode=`` nor ``OPENENV_CLIENT_MODE`` says one
    default_mode: ClassVar[str] = "simulation"

    @property
    def mode(self) -> str:
        """``"simulation"`` or ``"production"`` (``mode=``, else ``OPENENV_CLIENT_MODE``); fixed at construction."""
        return self._mode

    # ---- override hooks ------------------------------------------------------------------

    def _step_payload(self, action: ActT) -> dict[str, Any]:
        """The ``data`` of a ``step`` frame. Override for custom encodings."""
        return action.model_dump()

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ObsT]:
        """Turn an ``observation`` frame's ``data`` into a ``StepResult``."""
        obs = wire.parse_observation(payload, self.observation_cls)
        return StepResult(
            observation=obs,  # type: ignore[arg-type]
            reward=payload.get("reward"),
            done=bool(payload.get("done", False)),
            metadata=payload.get("metadata") or {},
        )

    def _parse_state(self, payload: dict[str, Any]) -> StateT:
        """Turn a ``state`` frame's ``data`` into the state model."""
        return self.state_cls.model_validate(payload)  # type: ignore[return-value]

    # ---- public API ----------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """True while a session is open."""
        return self._ws is not None or self._mux is not None

    @property
    def bound_loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the open session belongs to (its socket works on that loop only)."""
        return self._loop if self.connected else None

    async def connect(self: ClientT) -> ClientT:
        """Open the session (a no-op if one is open). ``async with`` calls this."""
        if not self.connected:
            if self._busy:
                raise RuntimeError(
                    f"{type(self).__name__}.connect() called while a request is in flight"
                )
            self._busy = True
            try:
                await self._open()
            finally:
                self._busy = False
        return self

    async def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> StepResult[ObsT]:
        """Start an episode. Opens a fresh session first if the last one was lost or closed."""
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"reset(seed=...) must be a non-negative int or None, got {seed!r}")
        text = json.dumps(wire.reset_frame(seed=seed, episode_id=episode_id, **kwargs))
        return self._parse_result(await self._request(text, "observation", "reset", fresh=True))

    async def step(self, action: ActT) -> StepResult[ObsT]:
        """Send one action and return the resulting observation, reward and done."""
        if self._fast_step:
            if not isinstance(action, BaseModel):
                raise TypeError(
                    f"step() expects a {self.action_cls.__name__} instance, got {type(action).__name__}; "
                    f"build one with {self.action_cls.__name__}(...) or use GenericEnvClient for dict actions"
                )
            text = '{"type":"step","data":' + action.model_dump_json() + "}"
        else:
            text = json.dumps(wire.step_frame(self._step_payload(action)))
        return self._parse_result(await self._request(text, "observation", "step"))

    async def state(self) -> StateT:
        """The server-side state of the current episode."""
        return self._parse_state(await self._request(_STATE_TEXT, "state", "state"))

    async def close(self) -> None:
        """End the session politely; stop the server too if this client started it."""
        ws, self._ws = self._ws, None
        mux, self._mux = self._mux, None
        if self._lost is None:
            self._lost = "the session was closed by close()"
        if mux is not None:
            mux.retire()
        try:
            if ws is not None:
                try:
                    await ws.send(_CLOSE_TEXT)
                    await ws.close()
                except (ConnectionClosed, OSError):
                    pass
                except BaseException:
                    ws.transport.abort()
                    raise
        finally:
            provider, self._provider = self._provider, None
            if provider is not None:
                self._final = "the client was closed and its server stopped; create a new client"
                await asyncio.to_thread(provider.stop)

    async def __aenter__(self: ClientT) -> ClientT:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __enter__(self) -> SyncEnvClient:
        """``with Env(base_url=...) as env:`` (OpenEnv's blocking idiom): ``env`` is ``self.sync()``, connected."""
        sync = self.sync()
        self._sync_view = sync
        return sync.__enter__()

    def __exit__(self, *exc: object) -> None:
        sync = self.__dict__.pop("_sync_view", None) or self.sync()
        sync.__exit__(*exc)

    def sync(self) -> SyncEnvClient:
        """A blocking wrapper with the same methods; works inside or outside a running loop."""
        from .sync import SyncEnvClient

        return SyncEnvClient(self)

    @classmethod
    async def from_provider(
        cls: type[ClientT],
        provider: ServerProvider,
        *,
        stop_on_close: bool = True,
        **client_kwargs: Any,
    ) -> ClientT:
        """Start ``provider`` (unless started), connect, and stop it when the client closes."""
        base_url = provider.base_url or await asyncio.to_thread(provider.start)
        try:
            client = cls(base_url, **client_kwargs)
            await client.connect()
        except BaseException:
            if stop_on_close:
                await asyncio.to_thread(provider.stop)
            raise
        if stop_on_close:
            client._provider = provider
        return client

    @classmethod
    def from_provider_sync(
        cls: type[ClientT], provider: ServerProvider, **kwargs: Any
    ) -> SyncEnvClient:
        """Blocking twin of ``from_provider``: ``with Env.from_provider_sync(provider) as env:``."""
        from .sync import SyncEnvClient, run_sync

        return SyncEnvClient(run_sync(cls.from_provider(provider, **kwargs)))

    @classmethod
    def from_docker_image(
        cls: type[ClientT], image: str, provider: Any = None, **kwargs: Any
    ) -> ClientBootstrap[ClientT]:
        """OpenEnv's ``from_docker_image``: serve ``image`` in a hardened container.

        ``await`` the handle for a connected client or call ``.sync()``; the container starts
        then and stops when the client closes. ``kwargs`` go to the container provider
        (``openenv_train.runtime.ContainerProvider``: ``engine=``, ``env=``, ``relax=``...).
        """
        from .bootstrap import ClientBootstrap, container_provider

        return ClientBootstrap(cls, lambda: container_provider(image, provider, kwargs))

    @classmethod
    def from_env(
        cls: type[ClientT],
        repo_id: str,
        *,
        use_docker: bool = True,
        provider: Any = None,
        **provider_kwargs: Any,
    ) -> ClientBootstrap[ClientT]:
        """OpenEnv's ``from_env``: a hub id (``"org/echo-env"``) served from a local image or an
        installed env package when there is one, else fetched from the hub (an error naming
        the fix when the hub cannot be reached). ``await`` it, or call ``.sync()``."""
        from .bootstrap import ClientBootstrap, hub_provider

        return ClientBootstrap(
            cls, lambda: hub_provider(repo_id, use_docker, provider, provider_kwargs)
        )

    # ---- transport -----------------------------------------------------------------------

    async def _ensure_started(self) -> None:
        """Start the server of ``EnvClient(provider=...)`` (given without a base_url) once."""
        if self._start_provider is None:
            return
        provider, self._start_provider = self._start_provider, None
        self._provider = provider  # stopped by close()
        base_url = await asyncio.to_thread(provider.start)
        self.base_url, self.ws_url = base_url.rstrip("/"), to_ws_url(base_url)
        host = urlsplit(self.ws_url).hostname or ""
        self._loopback = host in _LOOPBACK or host.startswith("127.")

    async def _open(self) -> None:
        if self._final is not None:
            raise SessionClosedError(self._final)
        await self._ensure_started()
        old, self._ws = self._ws, None
        if old is not None:
            old.transport.abort()
        if self._mux is not None:
            self._mux.retire()
            self._mux = None
        if self.batch_frames:
            self._mux = await open_batch_session(self.ws_url, self._handshake)
            if self._mux is not None:
                self._loop = asyncio.get_running_loop()
                self._lost = None
                return
        self._ws = await self._handshake()
        self._loop = asyncio.get_running_loop()
        self._lost = None

    async def _handshake(self, **extra: Any) -> ClientConnection:
        """Open a WebSocket to ``ws_url`` with this client's settings; errors say what failed."""
        kwargs: dict[str, Any] = {
            "compression": None,
            "open_timeout": self.connect_timeout,
            "max_size": self.max_message_size,
            "ping_interval": self.ping_interval,
            "ping_timeout": self.ping_timeout,
            "close_timeout": 2.0,
            "user_agent_header": None,
        }
        if self._loopback:
            kwargs["proxy"] = None
        headers = dict(self.headers)
        if self._token is not None:
            headers["Authorization"] = "Bearer " + self._token
        if headers:
            kwargs["additional_headers"] = headers
        if "Authorization" in headers:
            kwargs["logger"] = _WS_LOG
        kwargs.update(extra)
        try:
            return await ws_connect(self.ws_url, **kwargs)
        except InvalidStatus as e:
            status = e.response.status_code
            msg = f"{self.ws_url} refused the WebSocket handshake with HTTP {status}"
            if status in (429, 503):
                raise CapacityReachedError(msg, data={"http_status": status}) from e
            if status in (401, 403):
                hint = "was refused" if self._token else "is missing"
                raise ServerUnreachableError(
                    f"{msg}: the access token {hint}; pass token=... or set OPENENV_TRAIN_TOKEN "
                    "(or OPENENV_TRAIN_TOKEN_FILE) to the server's token"
                ) from e
            raise ServerUnreachableError(f"{msg}; is this an env server base_url?") from e
        except (TimeoutError, asyncio.TimeoutError) as e:
            raise RequestTimeoutError(
                f"opening a session at {self.ws_url} took longer than connect_timeout={self.connect_timeout}s"
            ) from e
        except (OSError, InvalidHandshake) as e:
            raise ServerUnreachableError(
                f"could not open a session at {self.ws_url}: {e}; is the env server running at that address?"
            ) from e

    def _drop(self, why: str) -> None:
        """Abort the socket now: a reply still on its way can never reach a later call."""
        ws, self._ws = self._ws, None
        self._lost = why
        if ws is not None:
            ws.transport.abort()
        mux, self._mux = self._mux, None
        if mux is not None:
            mux.retire()

    async def _request(
        self, text: str, expect: str, what: str, fresh: bool = False
    ) -> dict[str, Any]:
        """Send one frame and read its reply. ``fresh``: (re)open a lost session first (reset)."""
        if self._busy:
            raise RuntimeError(
                f"{type(self).__name__}.{what}() called while another request is in flight on the "
                "same session; use one client per concurrent session"
            )
        ws = await self._usable_socket(what, fresh)
        self._busy = True
        raw: str | bytes | dict[str, Any]
        try:
            if ws is None:  # the session rides a batch channel
                assert self._mux is not None
                raw = await self._mux.request(text, self.timeout)
            else:
                try:
                    await ws.send(text)
                except ConnectionClosed:
                    pass  # a refusing server sends an error frame then closes: read it below
                if _timeout is not None:
                    async with _timeout(self.timeout):
                        raw = await ws.recv()
                else:  # Python 3.10
                    raw = await asyncio.wait_for(ws.recv(), self.timeout)
        except asyncio.CancelledError:
            self._drop(f"{what}() was cancelled while waiting for its reply")
            raise
        except (TimeoutError, asyncio.TimeoutError, ConnectionClosed, OSError) as e:
            raise self._transport_error(e, text, what) from (
                None if isinstance(e, (TimeoutError, asyncio.TimeoutError)) else e
            )
        except ConnectionLostError:  # the batch channel under this session closed
            self._drop(f"the connection closed during {what}()")
            raise
        finally:
            self._busy = False
        return self._reply(raw, expect, what)

    async def _usable_socket(self, what: str, fresh: bool) -> ClientConnection | None:
        """This session's open socket (``None``: it rides a batch channel), reopened for a reset."""
        mux = self._mux
        if mux is not None and not mux.usable:  # the shared connection went away under it
            self._drop("the connection to the server closed")
            if not fresh:
                raise ConnectionLostError(
                    f"the connection to {self.ws_url} closed before {what}() "
                    f"({mux.channel.dead}); call reset() to start a new session"
                )
        ws = self._ws
        if fresh and ws is not None and ws.state is not WsState.OPEN:
            # the server ended the idle session (reaper, restart) before this reset: nothing is
            # lost at an episode boundary, so open a new session instead of failing
            self._drop("the server closed the idle session")
            ws = None
        if ws is None and self._mux is None:
            if self._final is not None:
                raise SessionClosedError(self._final)
            if self._lost is not None and not fresh:
                raise SessionClosedError(f"{self._lost}; call reset() to start a new session")
            self._busy = True
            try:
                await self._open()
            finally:
                self._busy = False
            return self._ws
        if self._loop is not asyncio.get_running_loop():
            raise RuntimeError(
                f"{type(self).__name__} was connected on another event loop; use it from that loop "
                "(or call .sync() before connecting for blocking use)"
            )
        return ws

    def _transport_error(self, e: BaseException, text: str, what: str) -> OpenEnvTrainError:
        """Drop the connection and say what failed: a late reply must never answer a later call."""
        if isinstance(e, (TimeoutError, asyncio.TimeoutError)):
            self._drop(f"{what}() timed out after {self.timeout}s and the connection was dropped")
            return RequestTimeoutError(
                f"no reply to {what}() within timeout={self.timeout}s from {self.ws_url}; the "
                "connection was dropped so a late reply cannot be mistaken for a later one; "
                "call reset() to start a new session (or raise timeout=)"
            )
        if isinstance(e, ConnectionClosed):
            self._drop(f"the connection closed during {what}()")
            if e.rcvd is not None and e.rcvd.code == 1009:  # our own frame was too big
                return RequestTooLargeError(
                    f"{what}(): the request ({len(text)} bytes) is larger than {self.ws_url} "
                    "accepts (its Limits.max_frame_bytes), so the server closed the session; "
                    "send less (or start the server with a larger max_frame_bytes), then call "
                    "reset() to start a new session",
                    data={"request_bytes": len(text)},
                )
            return ConnectionLostError(
                f"the connection to {self.ws_url} closed during {what}() ({_close_text(e)}); "
                "call reset() to start a new session"
            )
        self._drop(f"the connection failed during {what}()")
        return ConnectionLostError(f"the connection to {self.ws_url} failed during {what}(): {e}")

    def _reply(self, raw: str | bytes | dict[str, Any], expect: str, what: str) -> dict[str, Any]:
        try:
            msg = raw if type(raw) is dict else json.loads(raw)
            mtype = msg.get("type")
        except (ValueError, AttributeError):
            self._drop(f"the server sent a non-JSON reply to {what}()")
            raise UnexpectedFrameError(
                f"{what}(): reply is not a JSON frame: {raw[:200]!r}"
            ) from None
        if mtype == expect:
            data = msg.get("data")
            return data if isinstance(data, dict) else {}
        if mtype == "error":
            err = error_from_frame(msg.get("data") or {})
            if isinstance(err, InfrastructureError):  # the server closes the session after these
                self._drop(f"the server ended the session: {err}")
            raise err
        self._drop(f"the server sent an unexpected {mtype!r} frame")
        raise UnexpectedFrameError(f"{what}(): expected a {expect!r} frame, got {str(raw)[:200]!r}")


def _close_text(e: ConnectionClosed) -> str:
    rcvd = e.rcvd
    if rcvd is None:
        return "no close frame: the server went away or the TCP connection was reset"
    return f"close code {rcvd.code}{': ' + rcvd.reason if rcvd.reason else ''}"
