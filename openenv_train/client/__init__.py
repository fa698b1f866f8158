"""Clients for env servers: async ``EnvClient`` (+ ``.sync()``), ``GenericEnvClient``, ``MCPToolClient``.

A client speaks the env protocol over a transport (``transport.py``: one WebSocket per session,
or ``batch.py``'s shared channel). It imports nothing from ``openenv_train.runtime``: starting a
server and connecting to it is ``openenv_train.runtime.connect_to(provider, client_cls)``.
OpenEnv's spellings (``connect_timeout_s=``, ``OPENENV_CLIENT_MODE``, ``from_docker_image``...)
are in ``openenv_train.openenv``.
"""

from .env_client import EnvClient, ServerProvider, UnexpectedFrameError
from .generic import GenericAction, GenericEnvClient, GenericObservation
from .mcp_client import MCPToolClient, ToolCallError
from .sync import SyncEnvClient
from .transport import ServerUnreachableError, Transport, WebSocketOptions

__all__ = [
    "EnvClient",
    "GenericAction",
    "GenericEnvClient",
    "GenericObservation",
    "MCPToolClient",
    "ServerProvider",
    "ServerUnreachableError",
    "SyncEnvClient",
    "ToolCallError",
    "Transport",
    "UnexpectedFrameError",
    "WebSocketOptions",
]
