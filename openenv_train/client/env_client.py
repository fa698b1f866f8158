"""``EnvClient``: the typed env API (reset, step, state) over one session's transport.

The protocol has no request ids: a reply is matched to a request only by order. So a client
never lets two requests overlap, and a request that times out or is cancelled drops the
session at once; a late reply then can never be read as the answer to a later call
(OpenEnv issue #1143). Later calls raise ``SessionClosedError`` until ``reset()`` opens a
fresh session.

The client speaks frames; a transport (``client.transport``) carries them: one WebSocket per
session, or a session on the shared batch channel (``client.batch``). Starting servers is the
runtime's job (``openenv_train.runtime.connect``): a client only stops a server it was handed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel
from websockets.exceptions import ConnectionClosed

from ..core import wire
from ..core.auth import client_token
from ..core.errors import (
    ConnectionLostError,
    EnvExecutionError,
    InfrastructureError,
    OpenEnvTrainError,
    RequestTimeoutError,
    RequestTooLargeError,
    SessionClosedError,
    error_from_frame,
)
from ..core.models import Action, ActT, Observation, ObsT, State, StateT, StepResult
from .batch import BatchTransport
from .errors import UnexpectedFrameError as UnexpectedFrameError
from .transport import Transport, WebSocketOptions, WebSocketTransport, close_text, to_ws_url

if TYPE_CHECKING:
    from .sync import SyncEnvClient

_STATE_TEXT = json.dumps(wire.STATE_FRAME)

ClientT = TypeVar("ClientT", bound="EnvClient[Any, Any, Any]")


class ServerProvider(Protocol):
    """A server someone can start and stop: what ``EnvClient(provider=...)`` stops on close.

    The client's only hook into runtimes (it never imports one); every provider of
    ``openenv_train.runtime`` fits.
    """

    @property
    def base_url(self) -> str | None: ...

    def start(self) -> str: ...

    def stop(self) -> None: ...


class EnvClient(Generic[ActT, ObsT, StateT]):
    """Async client for one env session. Subclass with three class attributes for a typed env::

        class BlackjackEnv(EnvClient[BlackjackAction, BlackjackObservation, BlackjackState]):
            action_cls, observation_cls, state_cls = BlackjackAction, BlackjackObservation, BlackjackState

    Use one client per concurrent session: requests on one client never overlap. ``async with``
    opens and closes the session; ``.sync()`` is the blocking twin. A client with a server of
    its own comes from ``openenv_train.runtime.connect_to(provider, BlackjackEnv)``.
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
        ping_timeout: float | None = 20.0,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        provider: ServerProvider | None = None,
    ) -> None:
        """``timeout``: seconds to wait for each reply (then the session is dropped; None: no
        limit); ``connect_timeout``: seconds to open the session; ``max_message_size``: bytes;
        ``ping_interval``/``ping_timeout``: keepalive pings (None: off); ``token``: the
        server's bearer token (default: the token of a server this process started, else
        ``OPENENV_TRAIN_TOKEN`` / ``OPENENV_TRAIN_TOKEN_FILE``); ``headers``: extra handshake
        headers; ``provider``: the started server behind ``base_url`` (its ``base_url`` when
        ``base_url`` is not given), stopped by ``close()``.
        """
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ValueError(
                f"timeout must be a positive number of seconds or None, got {timeout!r}"
            )
        if not (isinstance(connect_timeout, (int, float)) and connect_timeout > 0):
            raise ValueError(
                f"connect_timeout must be a positive number of seconds, got {connect_timeout!r}"
            )
        if base_url is None and provider is not None:
            base_url = provider.base_url
        if base_url is None:
            raise ValueError(
                "give base_url='http://host:port' (a provider that is not started has no URL: "
                "use openenv_train.runtime.connect_to(provider) to start one and connect)"
            )
        self.base_url = base_url.strip().rstrip("/") if isinstance(base_url, str) else base_url
        self.ws_url = to_ws_url(base_url)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_message_size = max_message_size
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.headers = check_headers(headers)
        self._token = client_token(self.base_url, token)
        self._transport: Transport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lost: str | None = None  # why the last session ended; None while usable
        self._final: str | None = None  # set when close() also stopped the server
        self._busy = False
        self._provider: ServerProvider | None = provider
        self._fast_step = type(self)._step_payload is EnvClient._step_payload

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
    def transport(self) -> Transport | None:
        """What carries the open session's frames (None while no session is open)."""
        return self._transport

    @property
    def connected(self) -> bool:
        """True while a session is open."""
        return self._transport is not None

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
        """End the session politely; stop the server too if this client was handed one."""
        transport, self._transport = self._transport, None
        if self._lost is None:
            self._lost = "the session was closed by close()"
        try:
            if transport is not None:
                await transport.close()
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

    def sync(self) -> SyncEnvClient:
        """A blocking wrapper with the same methods; works inside or outside a running loop."""
        from .sync import SyncEnvClient

        return SyncEnvClient(self)

    # ---- the session ---------------------------------------------------------------------

    def _options(self) -> WebSocketOptions:
        return WebSocketOptions(
            self.ws_url,
            connect_timeout=self.connect_timeout,
            max_message_size=self.max_message_size,
            ping_interval=self.ping_interval,
            ping_timeout=self.ping_timeout,
            headers=self.headers,
            token=self._token,
        )

    async def _open(self) -> None:
        """Open a session on a fresh transport (the batch channel when offered and asked for)."""
        if self._final is not None:
            raise SessionClosedError(self._final)
        old, self._transport = self._transport, None
        if old is not None:
            old.abort()
        options = self._options()
        transport: Transport | None = None
        if self.batch_frames:
            transport = await BatchTransport.open(options)
        if transport is None:
            transport = await WebSocketTransport.open(options)
        self._transport = transport
        self._loop = asyncio.get_running_loop()
        self._lost = None

    def _drop(self, why: str) -> None:
        """Abort the session now: a reply still on its way can never reach a later call."""
        transport, self._transport = self._transport, None
        self._lost = why
        if transport is not None:
            transport.abort()

    async def _request(
        self, text: str, expect: str, what: str, fresh: bool = False
    ) -> dict[str, Any]:
        """Send one frame and read its reply. ``fresh``: (re)open a lost session first (reset)."""
        if self._busy:
            raise RuntimeError(
                f"{type(self).__name__}.{what}() called while another request is in flight on the "
                "same session; use one client per concurrent session"
            )
        transport = await self._usable_transport(what, fresh)
        self._busy = True
        try:
            raw = await transport.request(text, self.timeout)
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

    async def _usable_transport(self, what: str, fresh: bool) -> Transport:
        """The open session's transport; a new session for a reset when there is none usable."""
        transport = self._transport
        if transport is not None and not transport.usable:
            if not fresh:
                reason = transport.closed_reason
                self._drop("the connection to the server closed")
                raise ConnectionLostError(
                    f"the connection to {self.ws_url} closed before {what}() ({reason}); "
                    "call reset() to start a new session"
                )
            # the server ended the idle session (reaper, restart) before this reset: nothing is
            # lost at an episode boundary, so open a new session instead of failing
            self._drop("the server closed the idle session")
            transport = None
        if transport is None:
            if self._final is not None:
                raise SessionClosedError(self._final)
            if self._lost is not None and not fresh:
                raise SessionClosedError(f"{self._lost}; call reset() to start a new session")
            self._busy = True
            try:
                await self._open()
            finally:
                self._busy = False
            assert self._transport is not None
            return self._transport
        if self._loop is not asyncio.get_running_loop():
            raise RuntimeError(
                f"{type(self).__name__} was connected on another event loop; use it from that loop "
                "(or call .sync() before connecting for blocking use)"
            )
        return transport

    def _transport_error(self, e: BaseException, text: str, what: str) -> OpenEnvTrainError:
        """Drop the session and say what failed: a late reply must never answer a later call."""
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
                f"the connection to {self.ws_url} closed during {what}() ({close_text(e)}); "
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
            # the server closes the session after these (an env's own InfrastructureError,
            # EnvInfrastructureError, leaves it open: the env decides what comes next)
            if isinstance(err, InfrastructureError) and not isinstance(err, EnvExecutionError):
                self._drop(f"the server ended the session: {err}")
            raise err
        self._drop(f"the server sent an unexpected {mtype!r} frame")
        raise UnexpectedFrameError(f"{what}(): expected a {expect!r} frame, got {str(raw)[:200]!r}")


def check_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Extra HTTP headers for the WebSocket handshake and ``/mcp`` requests, checked."""
    if headers is None:
        return {}
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ValueError(f"headers must be a dict of str to str, got {headers!r}")
    return dict(headers)
