"""``create_app``: the FastAPI app that serves one env type over HTTP, ``/mcp`` and ``/ws``.

Routes and bytes follow OpenEnv 0.10. What we add: concurrent sessions by default, a capacity
limit, an idle reaper, sync env code kept off the event loop, extra fields on ``/health``
(``active_sessions``, ``max_sessions``, ``mode``) that old clients ignore, and a gate in front of
every route (``guard``): an optional bearer token and the bounds of ``Limits``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from ..core.messages import ServerMode
from ..core.models import Action, EnvironmentMetadata, Observation, State
from .concurrency import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_TIMEOUT_S,
    ConcurrencyConfig,
    concurrency_from,
)
from .guard import Gate
from .http_server import HTTPEnvServer, check_session_bounds, resolve_mode
from .limits import Limits
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


def create_app(
    env: Callable[[], Any],
    action_cls: type[Action] | None,
    observation_cls: type[Observation] | None,
    state_cls: type[State] | str = State,
    *,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_timeout: float | None = DEFAULT_SESSION_TIMEOUT_S,
    mode: ServerMode | str | None = None,
    metadata: EnvironmentMetadata | dict[str, Any] | None = None,
    limits: Limits | None = None,
    token: str | None = None,
    web: bool | None = None,
    web_renderer: str | Path | None = None,
    env_name: str | None = None,
    max_concurrent_envs: int | None = None,
    concurrency_config: ConcurrencyConfig | None = None,
    reset_observation_cls: type[Observation] | None = None,
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
    name), ``max_concurrent_envs`` is ``max_sessions``, ``concurrency_config`` gives both bounds
    at once, ``reset_observation_cls`` (default ``observation_cls``) goes in ``/schema``; an ``MCPEnvironment`` class may pass ``None`` for ``action_cls``/``observation_cls``
    (OpenEnv allows it for tools-only envs): its tool actions and observations are used.
    The routes are an ``HTTPEnvServer``'s, registered on an app of our own. A string in the
    fourth place is OpenEnv's ``create_app(env, action_cls, observation_cls, env_name)``.
    """
    if isinstance(state_cls, str):
        if env_name is not None:
            raise TypeError(
                f"create_app got env_name twice ({state_cls!r} in the fourth place and "
                f"env_name={env_name!r}): pass one"
            )
        env_name, state_cls = state_cls, State
    if concurrency_config is None:
        if max_concurrent_envs is not None:
            max_sessions = max_concurrent_envs
        check_session_bounds(max_sessions, session_timeout)
        concurrency_config = ConcurrencyConfig(
            max_concurrent_envs=max_sessions, session_timeout=session_timeout
        )
    else:
        concurrency_config = concurrency_from(max_concurrent_envs, concurrency_config)
    resolved_mode = resolve_mode(mode)
    renderer = check_renderer(web_renderer)
    server = HTTPEnvServer(
        env,
        action_cls,
        observation_cls,
        concurrency_config=concurrency_config,
        state_cls=state_cls,
        reset_observation_cls=reset_observation_cls,
        metadata=metadata,
        limits=limits,
        token=token,
        env_name=env_name,
    )
    app = EnvApp(
        title=f"{server.name} (openenv-train env server)",
        description=f"OpenEnv 0.10 compatible env server, mode={resolved_mode}.",
    )
    server.register_routes(app, resolved_mode)
    if web_enabled(web):
        add_playground(app, renderer)
    return app


def create_web_interface_app(
    env: Callable[[], Any],
    action_cls: type[Action] | None,
    observation_cls: type[Observation] | None,
    env_name: str | None = None,
    max_concurrent_envs: int | None = None,
    concurrency_config: ConcurrencyConfig | None = None,
    gradio_builder: Callable[..., Any] | None = None,
    **kwargs: Any,
) -> FastAPI:
    """OpenEnv's name for an env app with a page to play it by hand: ours is the ``/web`` playground.

    OpenEnv builds that page with Gradio; ours is static and needs no extra package, so a
    ``gradio_builder`` has nothing to build on and is refused by name. Other keywords go to
    :func:`create_app` (``web_renderer=`` draws this env's observations on the page).
    """
    if gradio_builder is not None:
        raise ValueError(
            "gradio_builder: openenv-train's /web page is not built with Gradio; drop "
            "gradio_builder and pass web_renderer='renderer.js' (a script that draws this env's "
            "observations) to customise the page"
        )
    return create_app(
        env,
        action_cls,
        observation_cls,
        env_name=env_name,
        max_concurrent_envs=max_concurrent_envs,
        concurrency_config=concurrency_config,
        web=True,
        **kwargs,
    )
