"""Env servers: the Environment base class and create_app (HTTP, /ws, /mcp)."""

from .environment import Environment

__all__ = ["Environment"]
