"""``EnvRoutes``: one env type's routes (HTTP, ``/ws``, ``/mcp``), sessions and gate, added to a
FastAPI app.

``create_app`` registers one of these on an app of its own (``EnvApp``, whose ``/ws`` skips
routing); code that makes its own ``FastAPI()`` can register one on it and gets the same routes,
sessions, bounds and token check. Production mode leaves out HTTP ``/reset``, ``/step`` and
``/state`` (simulation controls); ``/health``, ``/sessions``, ``/schema``, ``/metadata``, ``/ws``
and ``/mcp`` stay in both modes.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.routing import WebSocketRoute

from ..core.auth import check_token, token_from_env
from ..core.mcp_types import CallToolAction, CallToolObservation, JsonRpcCode
from ..core.messages import ServerMode
from ..core.models import Action, EnvironmentMetadata, Observation, State
from ._threads import run_sync
from .calls import build_env, calls_for
from .encoding import JSONDecodeError, bound_errors, bounded_text, loads
from .environment import Environment
from .guard import Gate, GatedApp
from .jsonrpc import McpHandler, rpc_error
from .limits import Limits
from .mcp_environment import MCPEnvironment
from .mcp_streamable import StreamableMcp
from .mcp_ws import McpWebSocket
from .metrics import CONTENT_TYPE_LATEST, HttpMetrics, count_mcp_frames, instrument
from .self_check import SelfCheck
from .session_cap import apply_session_cap
from .sessions import SessionManager, factory_name
from .simulation import add_simulation_routes, validate_reset
from .ws import WebSocketEndpoint

MODES = ("simulation", "production")


def resolve_mode(mode: ServerMode | str | None) -> str:
    """``"simulation"`` or ``"production"`` from a ``ServerMode``, its value in any case, or (None)
    the ``OPENENV_MODE`` variable (unset: simulation); anything else is a ValueError."""
    chosen = mode if mode is not None else os.environ.get("OPENENV_MODE", "simulation")
    value = str(getattr(chosen, "value", chosen)).strip().lower()
    if value not in MODES:
        source = "mode" if mode is not None else "OPENENV_MODE"
        raise ValueError(f"{source}={chosen!r} is not a server mode; use one of {list(MODES)}")
    return value


def check_env_classes(
    env_factory: Any, action_cls: Any, observation_cls: Any, state_cls: Any
) -> None:
    if not callable(env_factory):
        raise TypeError(
            f"env (create_app's first argument) must be a class or a zero-argument callable that builds an env, got an "
            f"instance of {type(env_factory).__name__}; pass the class (MyEnv), not MyEnv()"
        )
    for arg, value, base in (
        ("action_cls", action_cls, BaseModel),
        ("observation_cls", observation_cls, Observation),
        ("state_cls", state_cls, BaseModel),
    ):
        if not (isinstance(value, type) and issubclass(value, base)):
            raise TypeError(f"{arg} must be a subclass of {base.__name__}, got {value!r}")


class _AppGate(GatedApp):
    """The gate in front of a plain FastAPI app's routes, read from the app on every request, so
    ``serve()`` can give it a token later (as it does to an ``EnvApp``)."""

    def __init__(self, app: Any, owner: Any) -> None:
        self.app, self.owner = app, owner

    @property
    def gate(self) -> Gate:  # type: ignore[override]
        return self.owner.gate

    @property
    def limits(self) -> Limits:  # type: ignore[override]
        return self.owner.gate.limits


class EnvRoutes:
    """Serve ``env``'s envs (a class or factory) on a FastAPI app; one env per session.

    ``limits``: every bound on what a client may spend, the session bounds (``max_sessions``,
    ``session_timeout_s``) included (default ``Limits.from_env()``). ``token``: require
    ``Authorization: Bearer`` (default: the ``OPENENV_TRAIN_TOKEN`` variables). ``name``: the
    server's name (the app's title, the MCP server's name; default the factory's name). An
    ``MCPEnvironment`` class may pass None for ``action_cls``/``observation_cls``: its tool
    actions and observations are used. ``schema`` (served at ``/schema``) and ``metadata``
    (served at ``/metadata``; None: the env describes itself on the first request) may be changed
    before ``register``.
    """

    def __init__(
        self,
        env: Callable[[], Any],
        action_cls: type[Action] | None = None,
        observation_cls: type[Observation] | None = None,
        state_cls: type[State] = State,
        *,
        limits: Limits | None = None,
        token: str | None = None,
        name: str | None = None,
    ) -> None:
        if isinstance(env, type) and issubclass(env, MCPEnvironment):
            action_cls = CallToolAction if action_cls is None else action_cls
            observation_cls = CallToolObservation if observation_cls is None else observation_cls
        check_env_classes(env, action_cls, observation_cls, state_cls)
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError(
                f"limits must be an openenv_train.Limits (limits=Limits(max_sessions=...)), got {limits!r}"
            )
        assert action_cls is not None and observation_cls is not None  # checked above
        self.env_factory = env
        self.action_cls: type[Action] = action_cls
        self.observation_cls: type[Observation] = observation_cls
        self.state_cls = state_cls
        self.limits = apply_session_cap(limits if limits is not None else Limits.from_env())
        self.gate = Gate(
            self.limits, check_token(token, "token") if token is not None else token_from_env()
        )
        self.name = name or factory_name(env)
        self.sessions = SessionManager(
            env, self.limits.max_sessions, self.limits.session_timeout_s, self.limits
        )
        self.mcp = McpHandler(self.sessions, action_cls)
        self.ws_endpoint = WebSocketEndpoint(
            self.sessions, action_cls, validate_reset, self.mcp, self.limits
        )
        self.schema: dict[str, Any] = {
            "action": action_cls.model_json_schema(),
            "observation": observation_cls.model_json_schema(),
            "reset_observation": observation_cls.model_json_schema(),
            "state": state_cls.model_json_schema(),
        }
        self.metadata: EnvironmentMetadata | None = None
        #: what ``/metrics`` reports (its own registry: ``self.metrics.registry``)
        self.metrics = instrument(self)

    @property
    def active_sessions(self) -> int:
        """Sessions open now, counting those whose env is still being built."""
        return self.sessions.active

    def register(self, app: FastAPI, mode: ServerMode | str | None = None) -> None:
        """Add this env's routes, its token and size gate, and its shutdown to ``app``.

        ``mode``: ``"simulation"`` (HTTP ``/reset``, ``/step``, ``/state`` too) or
        ``"production"`` (without them), a ``ServerMode``, or None: the ``OPENENV_MODE``
        variable, else simulation. One env server per app: a second one is a RuntimeError.
        """
        if not isinstance(app, FastAPI):
            raise TypeError(
                f"app must be a fastapi.FastAPI, got {type(app).__name__}; make one with FastAPI() "
                "(or use create_app(), which makes the app too)"
            )
        resolved = resolve_mode(mode)
        if isinstance(getattr(app, "gate", None), Gate):
            raise RuntimeError(
                "this app already serves an env (routes were registered on it before); "
                "make one FastAPI app per env server, or mount each env's app under its own path"
            )
        app.gate = self.gate  # type: ignore[attr-defined]
        app.limits = self.limits  # type: ignore[attr-defined]  (found by find_limits)
        app.sessions = self.sessions  # type: ignore[attr-defined]
        app.state.mode = resolved
        if hasattr(app, "ws_endpoint"):  # an EnvApp: it gates every request and serves /ws itself
            app.ws_endpoint = self.ws_endpoint
        else:
            app.add_middleware(_AppGate, owner=app)
        app.add_middleware(HttpMetrics, metrics=self.metrics)
        self._close_sessions_on_shutdown(app)
        app.add_exception_handler(RequestValidationError, _validation_error)
        app.router.routes.append(WebSocketRoute("/ws", self.ws_endpoint))
        mcp_ws = McpWebSocket(self.sessions, self.mcp, self.limits)
        count_mcp_frames(mcp_ws, self.metrics)
        app.router.routes.append(WebSocketRoute("/mcp", mcp_ws))
        self._add_info_routes(app, resolved)
        self._add_mcp_routes(app)
        if resolved == "simulation":
            add_simulation_routes(app, self.env_factory, self.action_cls, self.state_cls)

    def _close_sessions_on_shutdown(self, app: FastAPI) -> None:
        """Close every session's env when the app shuts down, after the app's own lifespan."""
        inner = app.router.lifespan_context
        manager = self.sessions

        @asynccontextmanager
        async def lifespan(a: Any) -> AsyncIterator[Any]:
            async with inner(a) as state:
                yield state
            await manager.shutdown()

        app.router.lifespan_context = lifespan

    def _add_info_routes(self, app: FastAPI, mode: str) -> None:
        manager, limits, env_factory, schema = (
            self.sessions,
            self.limits,
            self.env_factory,
            self.schema,
        )
        meta_cache = [] if self.metadata is None else [self.metadata]
        self_check = SelfCheck()

        @app.get("/health", tags=["Health"])
        async def health() -> Any:
            body = {
                "status": "healthy",
                "active_sessions": manager.active,
                "max_sessions": manager.max_sessions,
                "mode": mode,
            }
            why = await self_check.reason() or await unready_reason(env_factory, manager, limits)
            if why is None:
                return body  # OpenEnv 0.10's answer, plus fields its clients ignore
            body.update(status="unhealthy", reason=why)
            return JSONResponse(body, status_code=503)

        @app.get("/sessions", tags=["Health"])
        async def sessions() -> dict[str, Any]:
            """Session counts (debug); never lists session ids, which grant access to a session."""
            by_kind: dict[str, int] = {}
            for s in manager.sessions.values():
                by_kind[s.kind] = by_kind.get(s.kind, 0) + 1
            return {
                "active_sessions": manager.active,
                "max_sessions": manager.max_sessions,
                "by_kind": by_kind,
                "reaped": manager.reaped,
                "session_timeout": manager.session_timeout,
            }

        metrics = self.metrics

        @app.get("/metrics", tags=["Health"])
        async def get_metrics() -> Response:
            """The server's figures in Prometheus' text format (behind the token, like every
            route but /health)."""
            return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

        @app.get("/metadata", response_model=EnvironmentMetadata, tags=["Environment Info"])
        async def get_metadata() -> EnvironmentMetadata:
            if not meta_cache:
                meta_cache.append(await _describe(env_factory))
            return meta_cache[0]

        @app.get("/schema", tags=["Schema"])
        async def get_schema() -> dict[str, Any]:
            return schema

    def _add_mcp_routes(self, app: FastAPI) -> None:
        streamable = StreamableMcp(self.sessions, self.mcp, self.name)

        @app.post("/mcp", tags=["MCP"])
        async def mcp_endpoint(request: Request) -> Response:
            body = await request.body()
            try:
                req = loads(body)
            except JSONDecodeError:
                reply = rpc_error(JsonRpcCode.PARSE_ERROR)
            else:
                if isinstance(req, list):
                    reply = rpc_error(
                        JsonRpcCode.INVALID_REQUEST, "Batch requests are not supported"
                    )
                else:
                    return await streamable.post(request, req)
            return JSONResponse(reply)

        streamable.add_routes(app)


#: Seconds an env's own ``check_ready()`` may take before ``/health`` calls it unready.
READY_CHECK_TIMEOUT_S = 5.0


async def unready_reason(
    env_factory: Callable[[], Any], manager: SessionManager, limits: Limits
) -> str | None:
    """Why no step can complete now, or None: every session stuck in a call at capacity, or the
    env class's optional ``check_ready()`` (sync or async; returns None/True when ready, or
    False/a reason string, or raises) says it is not."""
    if manager.all_stuck(limits.stuck_call_s):
        return (
            f"every one of the {manager.max_sessions} sessions has been inside one call for over "
            f"stuck_call_s={limits.stuck_call_s:g}s"
        )
    check = getattr(env_factory, "check_ready", None)
    if not callable(check):
        return None
    try:
        if inspect.iscoroutinefunction(check):
            verdict = await asyncio.wait_for(check(), READY_CHECK_TIMEOUT_S)
        else:
            verdict = await asyncio.wait_for(run_sync(check), READY_CHECK_TIMEOUT_S)
    except asyncio.TimeoutError:
        return f"the env's check_ready() did not answer within {READY_CHECK_TIMEOUT_S:g}s"
    except Exception as exc:
        return bounded_text(f"the env's check_ready() raised {type(exc).__name__}: {exc}", 500)
    if verdict is None or verdict is True:
        return None
    return bounded_text(str(verdict) if verdict else "the env's check_ready() said not ready", 500)


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422 shape, with each echoed input cut to a few JSON-safe bytes."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    return JSONResponse({"detail": bound_errors(errors)}, status_code=422)


async def _describe(env_factory: Callable[[], Any]) -> EnvironmentMetadata:
    describe = getattr(env_factory, "describe", None)
    if inspect.isclass(env_factory) and callable(describe) and not _own_get_metadata(env_factory):
        return describe()
    env = await build_env(env_factory)
    try:
        if _own_get_metadata(type(env)):  # OpenEnv's per-instance hook, when the env defines one
            return await run_sync(env.get_metadata)
        describe = getattr(type(env), "describe", None)
        if callable(describe):
            return describe()
        doc = inspect.getdoc(type(env)) or ""
        return EnvironmentMetadata(name=type(env).__name__, description=doc.split("\n\n")[0])
    finally:
        await calls_for(env).close(env)


def _own_get_metadata(cls: type) -> bool:
    """Whether ``cls`` defines OpenEnv's ``get_metadata()`` itself (not our base class's)."""
    fn = getattr(cls, "get_metadata", None)
    return callable(fn) and fn is not getattr(Environment, "get_metadata", None)
