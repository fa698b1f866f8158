"""``create_app``: the FastAPI app that serves one env type over HTTP, ``/mcp`` and ``/ws``.

Routes and bytes follow OpenEnv 0.10. What we add: concurrent sessions by default, a capacity
limit, an idle reaper, sync env code kept off the event loop, extra fields on ``/health``
(``active_sessions``, ``max_sessions``, ``mode``) that old clients ignore, and a gate in front of
every route (``guard``): an optional bearer token and the bounds of ``Limits``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from ..core.messages import ServerMode
from ..core.models import Action, Observation, State
from .guard import Gate
from .limits import Limits
from .routes import EnvRoutes, resolve_mode
from .sessions import SessionManager
from .web import add_playground, check_renderer, web_enabled
from .ws import WebSocketEndpoint
from .wsproto_fast import upgrade_default_ws


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


#: Keywords that are not create_app's, each with the spelling that is (OpenEnv's keywords work
#: from ``openenv_train.openenv``'s create_app; the others are this package's earlier ones).
_NOT_NATIVE: Mapping[str, str] = {
    "env_name": "the server is named after the env factory",
    "max_concurrent_envs": "pass limits=Limits(max_sessions=N)",
    "concurrency_config": "pass limits=Limits(max_sessions=N, session_timeout_s=S)",
    "reset_observation_cls": "/schema gives observation_cls for reset too",
    "max_sessions": "pass limits=Limits(max_sessions=N)",
    "session_timeout": "pass limits=Limits(session_timeout_s=S)",
    "web_renderer": "pass web=PATH (the page on, drawn by that renderer)",
    "metadata": "set the env class's `metadata` attribute or override its get_metadata()",
}
_OPENENV_ONLY = ("env_name", "max_concurrent_envs", "concurrency_config", "reset_observation_cls")


def _native_spelling(fn: Callable[..., FastAPI]) -> Callable[..., FastAPI]:
    """Refuse a keyword of OpenEnv's (or of our earlier) ``create_app`` by name, with the native
    spelling, instead of Python's bare "unexpected keyword argument"."""

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> FastAPI:
        for name in kwargs:
            if name in _NOT_NATIVE:
                openenv = (
                    "; OpenEnv's spelling works from openenv_train.openenv's create_app"
                    if name in _OPENENV_ONLY
                    else ""
                )
                raise TypeError(f"create_app() takes no {name}=: {_NOT_NATIVE[name]}{openenv}")
        return fn(*args, **kwargs)

    return checked


@_native_spelling
def create_app(
    env: Callable[[], Any],
    action_cls: type[Action] | None = None,
    observation_cls: type[Observation] | None = None,
    state_cls: type[State] = State,
    *,
    limits: Limits | None = None,
    mode: ServerMode | str | None = None,
    token: str | None = None,
    web: bool | str | Path | None = None,
) -> FastAPI:
    """Serve ``env``'s envs (a class or factory); one env instance per WebSocket (or ``/mcp``) session.

    ``limits``: every bound on what a client may spend, one place for each: the sessions held at
    once (``max_sessions``), how long a used one may sit idle (``session_timeout_s``), sizes,
    deadlines, rates (default: ``Limits.from_env()``). ``mode``: ``"simulation"`` (default) or
    ``"production"`` (no HTTP /reset, /step, /state); when None, the ``OPENENV_MODE``
    environment variable decides. ``token``: require ``Authorization: Bearer <token>`` on every
    route but ``/health`` (default: the ``OPENENV_TRAIN_TOKEN`` or ``OPENENV_TRAIN_TOKEN_FILE``
    variable; unset means no token). ``web``: serve the playground page at ``/web`` (behind the
    same gate): True, False, or the path of a ``.js`` renderer that draws this env's observations
    on the page (on, with that renderer); None: the ``OPENENV_TRAIN_WEB`` variable, which
    ``openenv-train serve`` sets on loopback, else off. An ``MCPEnvironment`` class may leave out
    ``action_cls``/``observation_cls``: its tool actions and observations are used.

    ``/metadata`` comes from the env, not from here (so each bound and each fact has one place):
    an instance's ``get_metadata()`` when the class overrides it, else the class's ``metadata``
    attribute, else the class name and the first paragraph of its docstring.
    OpenEnv's signature (``env_name`` in the fourth place, ``max_concurrent_envs``,
    ``concurrency_config``, ``reset_observation_cls``) is ``openenv_train.openenv``'s create_app.
    """
    if isinstance(state_cls, str):
        raise TypeError(
            f"create_app() got {state_cls!r} in the fourth place, OpenEnv's env_name: here the "
            "fourth argument is state_cls and the server is named after the env factory; "
            "OpenEnv's signature works from openenv_train.openenv's create_app"
        )
    routes = EnvRoutes(env, action_cls, observation_cls, state_cls, limits=limits, token=token)
    return env_app(routes, mode, web)


def env_app(
    routes: EnvRoutes, mode: ServerMode | str | None, web: bool | str | Path | None
) -> EnvApp:
    """``routes`` on an ``EnvApp`` of their own, with the playground when ``web`` asks for it
    (``create_app``'s ``mode`` and ``web``)."""
    if isinstance(web, (str, Path)):
        renderer, playground = check_renderer(web), True
    else:
        renderer, playground = None, web_enabled(web)
    resolved_mode = resolve_mode(mode)
    app = EnvApp(
        title=f"{routes.name} (openenv-train env server)",
        description=f"OpenEnv 0.10 compatible env server, mode={resolved_mode}.",
    )
    routes.register(app, resolved_mode)
    if playground:
        add_playground(app, renderer)
    return app
