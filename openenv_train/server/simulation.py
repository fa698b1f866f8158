"""Simulation mode's stateless HTTP ``/reset``, ``/step`` and ``/state``, and the request bodies
they (and ``/ws`` ``reset`` frames) are checked against.

Each call builds an env, uses it once and closes it, as in OpenEnv 0.10; episodes live in
sessions (``/ws``, ``/mcp``). Production mode leaves these routes out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Body, FastAPI, HTTPException
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError

from ..core.errors import env_error_members
from ..core.models import Action, State
from ..core.wire import observation_json, parse_action, state_json
from .calls import build_env, calls_for
from .encoding import bounded_text, errors_list
from .environment import NoEpisodeError
from .lograte import LimitedWarning
from .sessions import FactoryError, factory_name

log = logging.getLogger("openenv_train.server")
_ENV_RAISED = LimitedWarning(log)  # a client can make an env raise on every request

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


def add_simulation_routes(
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
            detail = {"code": "EXECUTION_ERROR", "message": message, **env_error_members(exc)}
            raise HTTPException(500, detail=detail) from exc
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
