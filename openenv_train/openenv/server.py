"""OpenEnv's server API on openenv-train: ``HTTPEnvServer``, ``ConcurrencyConfig``,
``ServerCapacityStatus``, ``create_app`` with OpenEnv's signature and
``create_web_interface_app``.

An OpenEnv env's ``app.py`` runs with its ``openenv.core.env_server...`` imports changed to
``openenv_train.openenv``. Everything here maps onto the native server
(``openenv_train.server``: ``create_app``, ``EnvRoutes``, ``Limits``); what differs are the
spellings and our defaults: many concurrent sessions (GRPO opens a group of them at once) with an
idle timeout, where OpenEnv's default is one session that never times out.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from ..core.messages import ServerMode
from ..core.models import Action, EnvironmentMetadata, Observation, State
from ..server.app import env_app
from ..server.limits import Limits
from ..server.routes import EnvRoutes
from ..server.web import check_renderer, web_enabled

_DEFAULTS = Limits()


class ConcurrencyConfig(BaseModel):
    """``max_concurrent_envs``: sessions at once (each its own env); ``session_timeout``: seconds
    a used session may sit idle before it is reaped (None: never; sessions never used are still
    reaped after ``Limits.unused_session_timeout_s``). Natively: ``Limits(max_sessions=...,
    session_timeout_s=...)``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_concurrent_envs: StrictInt = Field(default=_DEFAULTS.max_sessions, ge=1)
    session_timeout: float | None = Field(default=_DEFAULTS.session_timeout_s, gt=0)


class ServerCapacityStatus(BaseModel):
    """Sessions open now against the limit (``HTTPEnvServer.get_capacity_status()``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    active_sessions: int = Field(ge=0)
    max_sessions: int = Field(ge=1)

    @model_validator(mode="after")
    def _within_limit(self) -> ServerCapacityStatus:
        if self.active_sessions > self.max_sessions:
            raise ValueError(
                f"active_sessions ({self.active_sessions}) exceeds max_sessions ({self.max_sessions})"
            )
        return self

    @property
    def available_slots(self) -> int:
        return self.max_sessions - self.active_sessions

    @property
    def is_at_capacity(self) -> bool:
        return self.available_slots == 0

    @classmethod
    def from_counts(cls, active: int, max_sessions: int) -> ServerCapacityStatus:
        return cls(active_sessions=active, max_sessions=max_sessions)


def session_limits(
    limits: Limits | None,
    max_concurrent_envs: int | None,
    concurrency_config: ConcurrencyConfig | None,
) -> Limits:
    """``limits`` (default ``Limits.from_env()``) with the session bounds OpenEnv's two spellings
    give: ``max_concurrent_envs=N`` is N sessions with the limits' idle timeout;
    ``concurrency_config`` gives both bounds; giving both spellings is a ValueError."""
    if limits is not None and not isinstance(limits, Limits):
        raise TypeError(f"limits must be an openenv_train.Limits, got {limits!r}")
    base = limits if limits is not None else Limits.from_env()
    if concurrency_config is None:
        if max_concurrent_envs is None:
            return base
        return base.with_sessions(max_concurrent_envs, base.session_timeout_s)
    if max_concurrent_envs is not None:
        raise ValueError(
            "give max_concurrent_envs or concurrency_config, not both "
            "(concurrency_config=ConcurrencyConfig(max_concurrent_envs=..., session_timeout=...))"
        )
    if not isinstance(concurrency_config, ConcurrencyConfig):
        raise TypeError(
            "concurrency_config must be an openenv_train.openenv.ConcurrencyConfig, "
            f"got {concurrency_config!r}"
        )
    return base.with_sessions(
        concurrency_config.max_concurrent_envs, concurrency_config.session_timeout
    )


class HTTPEnvServer(EnvRoutes):
    """OpenEnv's ``HTTPEnvServer(env, action_cls, observation_cls, max_concurrent_envs=None,
    concurrency_config=None, env_name=None, state_cls=State)``, then
    ``server.register_routes(app, mode)``: the native ``EnvRoutes`` under OpenEnv's names.

    ``max_concurrent_envs`` or ``concurrency_config`` (not both) bound the sessions; by default
    4096 of them, each reaped after 300 s idle (OpenEnv: one, never reaped). ``env_name`` names
    the MCP server; ``state_cls`` and ``reset_observation_cls`` (default: ``observation_cls``)
    are published in ``/schema``, as in OpenEnv. Our keywords: ``metadata`` (``/metadata``
    without building an env), ``limits`` (every other bound on what a client may spend; default
    ``Limits.from_env()``), ``token`` (require ``Authorization: Bearer``; default the
    ``OPENENV_TRAIN_TOKEN`` variables). An ``MCPEnvironment`` class may pass None for
    ``action_cls``/``observation_cls``: its tool actions and observations are used.
    """

    def __init__(
        self,
        env: Callable[[], Any],
        action_cls: type[Action] | None,
        observation_cls: type[Observation] | None,
        max_concurrent_envs: int | None = None,
        concurrency_config: ConcurrencyConfig | None = None,
        env_name: str | None = None,
        state_cls: type[State] = State,
        *,
        reset_observation_cls: type[Observation] | None = None,
        metadata: EnvironmentMetadata | dict[str, Any] | None = None,
        limits: Limits | None = None,
        token: str | None = None,
    ) -> None:
        bounded = session_limits(limits, max_concurrent_envs, concurrency_config)
        super().__init__(
            env, action_cls, observation_cls, state_cls, limits=bounded, token=token, name=env_name
        )
        if reset_observation_cls is not None:
            if not (
                isinstance(reset_observation_cls, type)
                and issubclass(reset_observation_cls, Observation)
            ):
                raise TypeError(
                    f"reset_observation_cls must be a subclass of Observation, got {reset_observation_cls!r}"
                )
            self.schema["reset_observation"] = reset_observation_cls.model_json_schema()
        if metadata is not None:
            self.metadata = (
                metadata
                if isinstance(metadata, EnvironmentMetadata)
                else EnvironmentMetadata(**metadata)
            )
        self.concurrency_config = ConcurrencyConfig(
            max_concurrent_envs=bounded.max_sessions, session_timeout=bounded.session_timeout_s
        )

    @property
    def max_concurrent_envs(self) -> int:
        return self.sessions.max_sessions

    def get_capacity_status(self) -> ServerCapacityStatus:
        return ServerCapacityStatus.from_counts(self.sessions.active, self.sessions.max_sessions)

    def register_routes(self, app: FastAPI, mode: ServerMode | str | None = None) -> None:
        """OpenEnv's name for ``register``: this env's routes, gate and shutdown on ``app``."""
        self.register(app, mode)


#: OpenEnv's Gradio-only ``create_app`` keywords, with their defaults (anything else is refused).
_GRADIO_DEFAULTS: dict[str, Any] = {
    "custom_tab_name": "Custom",
    "custom_tab_primary": False,
    "show_default_tab": True,
    "title_override": None,
}


def _refuse_gradio(gradio_builder: Any, options: dict[str, Any]) -> None:
    if gradio_builder is not None:
        raise ValueError(
            "gradio_builder: openenv-train's /web page is not built with Gradio; drop "
            "gradio_builder and pass web_renderer='renderer.js' (a script that draws this env's "
            "observations) to customise the page"
        )
    for name, value in options.items():
        if value != _GRADIO_DEFAULTS[name]:
            raise ValueError(
                f"{name}={value!r} shapes OpenEnv's Gradio page; openenv-train's /web page is "
                f"not built with Gradio: drop {name}"
            )


def create_app(
    env: Callable[[], Any],
    action_cls: type[Action] | None,
    observation_cls: type[Observation] | None,
    env_name: str | None = None,
    max_concurrent_envs: int | None = None,
    concurrency_config: ConcurrencyConfig | None = None,
    gradio_builder: Callable[..., Any] | None = None,
    custom_tab_name: str = "Custom",
    custom_tab_primary: bool = False,
    show_default_tab: bool = True,
    title_override: str | None = None,
    state_cls: type[State] = State,
    *,
    mode: ServerMode | str | None = None,
    reset_observation_cls: type[Observation] | None = None,
    metadata: EnvironmentMetadata | dict[str, Any] | None = None,
    limits: Limits | None = None,
    token: str | None = None,
    web: bool | None = None,
    web_renderer: str | Path | None = None,
) -> FastAPI:
    """OpenEnv's ``create_app``, positional order included, on the native server.

    ``env_name`` names the server (its title and MCP server name); ``max_concurrent_envs`` or
    ``concurrency_config`` bound the sessions (natively ``Limits(max_sessions=...,
    session_timeout_s=...)``); ``reset_observation_cls`` (default ``observation_cls``) goes in
    ``/schema``. Gradio's page options are refused unless left at their defaults: the page at
    ``/web`` is ours. Our keywords: ``metadata``, ``limits``, ``token``, ``web`` (None: the
    ``OPENENV_TRAIN_WEB`` variable) and ``web_renderer`` (a ``.js`` file that draws this env's
    observations on that page), as the native ``create_app`` reads them.
    """
    _refuse_gradio(
        gradio_builder,
        {
            "custom_tab_name": custom_tab_name,
            "custom_tab_primary": custom_tab_primary,
            "show_default_tab": show_default_tab,
            "title_override": title_override,
        },
    )
    if env_name is not None and not isinstance(env_name, str):
        raise TypeError(
            f"env_name (the fourth argument, as in OpenEnv) must be a str, got {env_name!r}; "
            "pass a state class as state_cls=..."
        )
    renderer = check_renderer(web_renderer)
    server = HTTPEnvServer(
        env,
        action_cls,
        observation_cls,
        max_concurrent_envs,
        concurrency_config,
        env_name,
        state_cls,
        reset_observation_cls=reset_observation_cls,
        metadata=metadata,
        limits=limits,
        token=token,
    )
    page: bool | Path = (renderer or True) if web_enabled(web) else False
    return env_app(server, mode, page)


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
    return create_app(
        env,
        action_cls,
        observation_cls,
        env_name,
        max_concurrent_envs,
        concurrency_config,
        gradio_builder,
        web=True,
        **kwargs,
    )


__all__ = [
    "ConcurrencyConfig",
    "HTTPEnvServer",
    "ServerCapacityStatus",
    "create_app",
    "create_web_interface_app",
]
