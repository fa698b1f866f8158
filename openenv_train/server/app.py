"""``create_app``: the FastAPI app that serves one env type over HTTP, ``/mcp`` and ``/ws``.

Routes and bytes follow OpenEnv 0.10. What we add: concurrent sessions by default, a capacity
limit, an idle reaper, sync env code kept off the event loop, extra fields on ``/health``
(``active_sessions``, ``max_sessions``, ``mode``) that old clients ignore, and a gate in front of
every route (``guard``): an optional bearer token and the bounds of ``Limits``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import Body, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError
from starlette.routing import WebSocketRoute

from ..core.auth import check_token, token_from_env
from ..core.mcp import CallToolAction, CallToolObservation, JsonRpcCode
from ..core.models import Action, EnvironmentMetadata, Observation, State
from ..core.wire import observation_json, parse_action, state_json
from ._threads import run_sync
from .calls import build_env, calls_for
from .encoding import JSONDecodeError, bound_errors, bounded_text, errors_list, loads
from .environment import Environment, NoEpisodeError
from .guard import Gate
from .jsonrpc import McpHandler, rpc_error
from .limits import Limits
from .lograte import LimitedWarning
from .mcp import MCPEnvironment
from .mcp_streamable import StreamableMcp
from .mcp_ws import McpWebSocket
from .sessions import FactoryError, SessionManager, factory_name
from .web import add_playground, check_renderer, web_enabled
from .ws import WebSocketEndpoint
from .wsproto_fast import upgrade_default_ws

log = logging.getLogger("openenv_train.server")
_ENV_RAISED = LimitedWarning(log)  # a client can make an env raise on every request

MODES = ("simulation", "production")

#: Why HTTP ``/step`` cannot continue a game, and where stateful clients go instead.
HTTP_NO_EPISODE = (
    "HTTP /step ran on a fresh env with no game in progress: every HTTP request gets its own env "
    "(as in OpenEnv 0.10), so the game a POST /reset started is already gone. For episodes open a "
    "session: the WebSocket /ws (EnvClient(base_url) or its .sync()) or /mcp (JSON-RPC "
    "'openenv/session/create', then 'tools/call' with that session_id)."
)


def _digits_to_int(value: Any) -> Any:
    """A numeric string seed (``"5"``) is the number, as OpenEnv's ``ResetRequest`` reads it;
    floats, booleans and other strings stay refused."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value


class ResetRequest(BaseModel):
    """Body of ``POST /reset`` and ``data`` of a ``reset`` frame; extra keys go to ``reset()``."""

    model_config = ConfigDict(extra="allow")

    seed: Annotated[int, BeforeValidator(_digits_to_int), Strict()] | None = Field(
        default=None, ge=0, description='Seed for a reproducible episode ("5" is read as 5)'
    )
    episode_id: str | None = Field(default=None, max_length=255)


class StepRequest(BaseModel):
    """Body of ``POST /step``; extra keys (e.g. ``timeout_s``) go to ``step()`` if it takes them."""

    model_config = ConfigDict(extra="allow")

    action: dict[str, Any] = Field(description="The action's fields, as in /schema 'action'")
    timeout_s: float | None = Field(default=None, gt=0)
    request_id: str | None = Field(default=None, max_length=255)


class StepResponse(BaseModel):
    observation: dict[str, Any]
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] | None = None


def validate_reset(data: dict[str, Any]) -> dict[str, Any]:
    """Check ``seed``/``episode_id`` and return the kwargs the client actually sent."""
    if not data:
        return {}
    return ResetRequest.model_validate(data).model_dump(exclude_unset=True)


class EnvApp(FastAPI):
    """A FastAPI app whose ``/ws`` bypasses routing and middleware (a hot path per frame).

    Every HTTP request and WebSocket upgrade passes ``gate`` first (token, sizes, deadlines).
    """

    ws_endpoint: WebSocketEndpoint | None = None
    sessions: SessionManager | None = None
    gate: Gate | None = None
    limits: Limits | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        kind = scope["type"]
        gate = self.gate
        if kind == "websocket":
            if gate is not None and not gate.authorised(scope):
                await gate.refuse_websocket(scope, receive, send)
                return
            if scope["path"] == "/ws" and self.ws_endpoint:
                await self.ws_endpoint(scope, receive, send)
                return
        elif kind == "http" and gate is not None:
            await gate.http(scope, receive, send, functools.partial(FastAPI.__call__, self))
            return
        elif kind == "lifespan":
            upgrade_default_ws(receive)  # a plain `uvicorn app` gets our lean /ws path too
        await super().__call__(scope, receive, send)


def _resolve_mode(mode: str | None) -> str:
    chosen = mode if mode is not None else os.environ.get("OPENENV_MODE", "simulation")
    value = str(getattr(chosen, "value", chosen)).strip().lower()
    if value not in MODES:
        source = "mode" if mode is not None else "OPENENV_MODE"
        raise ValueError(f"{source}={chosen!r} is not a server mode; use one of {list(MODES)}")
    return value


def _check_args(
    env_factory: Any,
    action_cls: Any,
    observation_cls: Any,
    state_cls: Any,
    max_sessions: Any,
    session_timeout: Any,
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
    if not isinstance(max_sessions, int) or isinstance(max_sessions, bool) or max_sessions < 1:
        raise ValueError(f"max_sessions must be an int >= 1, got {max_sessions!r}")
    if session_timeout is not None and not (
        isinstance(session_timeout, (int, float)) and session_timeout > 0
    ):
        raise ValueError(
            f"session_timeout must be seconds > 0, or None to disable the idle reaper; got {session_timeout!r}"
        )


def create_app(
    env: Callable[[], Any],
    action_cls: type[Action] | None,
    observation_cls: type[Observation] | None,
    state_cls: type[State] = State,
    *,
    max_sessions: int = 4096,
    session_timeout: float | None = 300.0,
    mode: str | None = None,
    metadata: EnvironmentMetadata | dict[str, Any] | None = None,
    limits: Limits | None = None,
    token: str | None = None,
    web: bool | None = None,
    web_renderer: str | Path | None = None,
    env_name: str | None = None,
    max_concurrent_envs: int | None = None,
) -> FastAPI:
    """Serve ``env``'s envs (a class or factory); one env instance per WebSocket (or ``/mcp``) session.

    ``mode``: ``"simulation"`` (default) or ``"production"`` (no HTTP /reset, /step, /state);
    when None, the ``OPENENV_MODE`` environment variable decides. ``session_timeout``: seconds
    without a request before a used session is reaped (None disables that; sessions never used
    are still reaped after ``limits.unused_session_timeout_s``). ``limits``: every bound on what
    a client may spend (default: ``Limits.from_env()``). ``token``: require
    ``Authorization: Bearer <token>`` on every route but ``/health`` (default: the
    ``OPENENV_TRAIN_TOKEN`` or ``OPENENV_TRAIN_TOKEN_FILE`` variable; unset means no token).
    ``web``: serve the playground page at ``/web`` (behind the same gate; default: the
    ``OPENENV_TRAIN_WEB`` variable, which ``openenv-train serve`` sets on loopback; else off).
    ``web_renderer``: a ``.js`` file that draws this env's observations on that page.
    OpenEnv's keywords work too, so an OpenEnv env's ``app.py`` runs with its imports changed:
    ``env`` is the first argument's name, ``env_name`` names the server (its title and MCP server
    name), ``max_concurrent_envs`` is ``max_sessions``; an ``MCPEnvironment`` class may pass
    ``None`` for ``action_cls``/``observation_cls`` (OpenEnv allows it for tools-only envs): its
    tool actions and observations are used.
    """
    env_factory = env  # OpenEnv's name for the first argument, so create_app(env=...) works too
    if isinstance(env_factory, type) and issubclass(env_factory, MCPEnvironment):
        action_cls = CallToolAction if action_cls is None else action_cls
        observation_cls = CallToolObservation if observation_cls is None else observation_cls
    if max_concurrent_envs is not None:
        max_sessions = max_concurrent_envs
    _check_args(env_factory, action_cls, observation_cls, state_cls, max_sessions, session_timeout)
    if limits is not None and not isinstance(limits, Limits):
        raise TypeError(f"limits must be an openenv_train.server.Limits, got {limits!r}")
    limits = limits if limits is not None else Limits.from_env()
    token = check_token(token, "token") if token is not None else token_from_env()
    resolved_mode = _resolve_mode(mode)
    renderer = check_renderer(web_renderer)
    manager = SessionManager(env_factory, max_sessions, session_timeout, limits)
    mcp = McpHandler(manager, action_cls)
    endpoint = WebSocketEndpoint(manager, action_cls, validate_reset, mcp, limits)
    meta_cache: list[EnvironmentMetadata] = []
    if metadata is not None:
        meta_cache.append(
            metadata
            if isinstance(metadata, EnvironmentMetadata)
            else EnvironmentMetadata(**metadata)
        )
    schema = {
        "action": action_cls.model_json_schema(),
        "observation": observation_cls.model_json_schema(),
        "state": state_cls.model_json_schema(),
    }

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        await manager.shutdown()

    name = env_name or factory_name(env_factory)
    streamable = StreamableMcp(manager, mcp, name)
    app = EnvApp(
        title=f"{name} (openenv-train env server)",
        description=f"OpenEnv 0.10 compatible env server, mode={resolved_mode}.",
        lifespan=lifespan,
    )
    app.ws_endpoint = endpoint
    app.sessions = manager
    app.limits = limits
    app.gate = Gate(limits, token)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.state.mode = resolved_mode
    app.router.routes.append(WebSocketRoute("/ws", endpoint))
    app.router.routes.append(WebSocketRoute("/mcp", McpWebSocket(manager, mcp, limits)))

    @app.get("/health", tags=["Health"])
    async def health() -> Any:
        body = {
            "status": "healthy",
            "active_sessions": manager.active,
            "max_sessions": manager.max_sessions,
            "mode": resolved_mode,
        }
        why = await unready_reason(env_factory, manager, limits)
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

    @app.get("/metadata", response_model=EnvironmentMetadata, tags=["Environment Info"])
    async def get_metadata() -> EnvironmentMetadata:
        if not meta_cache:
            meta_cache.append(await _describe(env_factory))
        return meta_cache[0]

    @app.get("/schema", tags=["Schema"])
    async def get_schema() -> dict[str, Any]:
        return schema

    @app.post("/mcp", tags=["MCP"])
    async def mcp_endpoint(request: Request) -> Response:
        body = await request.body()
        try:
            req = loads(body)
        except JSONDecodeError:
            reply = rpc_error(JsonRpcCode.PARSE_ERROR)
        else:
            if isinstance(req, list):
                reply = rpc_error(JsonRpcCode.INVALID_REQUEST, "Batch requests are not supported")
            else:
                return await streamable.post(request, req)
        return JSONResponse(reply)

    streamable.add_routes(app)

    if resolved_mode == "simulation":
        _add_simulation_routes(app, env_factory, action_cls, state_cls)
    if web_enabled(web):
        add_playground(app, renderer)
    return app


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


def _add_simulation_routes(
    app: FastAPI, env_factory: Callable[[], Any], action_cls: type[Action], state_cls: type[State]
) -> None:
    """Stateless HTTP /reset, /step, /state: build an env, call it, close it (as OpenEnv 0.10)."""

    async def with_env(call: Callable[[Any], Any]) -> Any:
        try:
            env = await build_env(env_factory)
        except Exception as exc:
            err = FactoryError(factory_name(env_factory), exc)
            raise HTTPException(503, detail={"code": "FACTORY_ERROR", "message": str(err)}) from exc
        try:
            return await call(env)
        except HTTPException:
            raise
        except NoEpisodeError as exc:
            message = bounded_text(f"{HTTP_NO_EPISODE} The env said: {exc}", 2000)
            raise HTTPException(409, detail={"code": "NO_EPISODE", "message": message}) from exc
        except Exception as exc:
            _ENV_RAISED.warn("env raised over HTTP: %s", bounded_text(str(exc), 500))
            message = bounded_text(f"{type(exc).__name__}: {exc}", 2000)
            raise HTTPException(
                500, detail={"code": "EXECUTION_ERROR", "message": message}
            ) from exc
        finally:
            try:
                await calls_for(env).close(env)
            except Exception:
                log.exception("env.close() raised")

    @app.post("/reset", response_model=StepResponse, tags=["Environment Control"])
    async def reset(request: ResetRequest = Body(default_factory=ResetRequest)) -> Response:
        kwargs = request.model_dump(exclude_unset=True)
        obs = await with_env(lambda env: calls_for(env).reset(env, kwargs))
        return Response(observation_json(obs), media_type="application/json")

    @app.post("/step", response_model=StepResponse, tags=["Environment Control"])
    async def step(request: StepRequest) -> Response:
        try:
            action = parse_action(request.action, action_cls)
        except ValidationError as exc:
            detail = errors_list(exc, prefix=("body", "action"))
            return JSONResponse({"detail": detail}, status_code=422)
        kwargs = request.model_dump(exclude_unset=True, exclude={"action"})
        obs = await with_env(lambda env: calls_for(env).step(env, action, kwargs))
        return Response(observation_json(obs), media_type="application/json")

    @app.get("/state", response_model=state_cls, tags=["State Management"])
    async def get_state() -> Response:
        st = await with_env(lambda env: calls_for(env).state(env))
        return Response(state_json(st), media_type="application/json")
