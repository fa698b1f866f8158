"""Env servers: the Environment base classes and create_app / EnvRoutes (HTTP, /ws, /mcp).

OpenEnv's server names (``HTTPEnvServer``, ``ConcurrencyConfig``, its ``create_app`` signature,
``create_web_interface_app``) live in ``openenv_train.openenv``.
"""

from .app import create_app
from .environment import CompositeTransform, Environment, NoEpisodeError, NullTransform, Transform
from .limits import Limits
from .mcp_environment import MCPEnvironment, tool
from .routes import EnvRoutes
from .serve import DEFAULT_HTTP_IMPL, DEFAULT_WS_IMPL, serve, uvicorn_kwargs

__all__ = [
    "DEFAULT_HTTP_IMPL",
    "DEFAULT_WS_IMPL",
    "CompositeTransform",
    "EnvRoutes",
    "Environment",
    "Limits",
    "MCPEnvironment",
    "NoEpisodeError",
    "NullTransform",
    "Transform",
    "create_app",
    "serve",
    "tool",
    "uvicorn_kwargs",
]
