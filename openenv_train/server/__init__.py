"""Env servers: the Environment base classes and create_app / HTTPEnvServer (HTTP, /ws, /mcp)."""

from .app import create_app, create_web_interface_app
from .concurrency import ConcurrencyConfig, ServerCapacityStatus
from .environment import CompositeTransform, Environment, NoEpisodeError, NullTransform, Transform
from .http_server import HTTPEnvServer
from .limits import Limits
from .mcp import MCPEnvironment, tool
from .serve import DEFAULT_HTTP_IMPL, DEFAULT_WS_IMPL, serve, uvicorn_kwargs

__all__ = [
    "DEFAULT_HTTP_IMPL",
    "DEFAULT_WS_IMPL",
    "CompositeTransform",
    "ConcurrencyConfig",
    "Environment",
    "HTTPEnvServer",
    "Limits",
    "MCPEnvironment",
    "NoEpisodeError",
    "NullTransform",
    "ServerCapacityStatus",
    "Transform",
    "create_app",
    "create_web_interface_app",
    "serve",
    "tool",
    "uvicorn_kwargs",
]
