"""Clients for env servers: async ``EnvClient`` (+ ``.sync()``), ``GenericEnvClient``, ``MCPToolClient``.

Imports nothing from ``openenv_train.runtime``: ``EnvClient.from_provider(provider)`` starts and
connects to a server through any provider (``runtime.LocalProcessProvider``, a container...).
"""

from .base import EnvClient, ServerProvider, ServerUnreachableError, UnexpectedFrameError
from .bootstrap import ClientBootstrap
from .generic import GenericAction, GenericEnvClient, GenericObservation
from .mcp import MCPToolClient, ToolCallError
from .sync import SyncEnvClient

__all__ = [
    "ClientBootstrap",
    "EnvClient",
    "GenericAction",
    "GenericEnvClient",
    "GenericObservation",
    "MCPToolClient",
    "ServerProvider",
    "ServerUnreachableError",
    "SyncEnvClient",
    "ToolCallError",
    "UnexpectedFrameError",
]
