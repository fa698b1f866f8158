"""Env servers: the Environment base classes and create_app (HTTP, /ws, /mcp)."""

from .app import create_app
from .environment import Environment, NoEpisodeError, Transform
from .limits import Limits
from .mcp import MCPEnvironment, tool
from .serve import DEFAULT_HTTP_IMPL, DEFAULT_WS_IMPL, serve, uvicorn_kwargs

__all__ = [
    "DEFAULT_HTTP_IMPL",
    "DEFAULT_WS_IMPL",
    "Environment",
    "Limits",
    "MCPEnvironment",
    "NoEpisodeError",
    "Transform",
    "create_app",
    "serve",
    "tool",
    "uvicorn_kwargs",
]
