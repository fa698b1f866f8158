"""Echo env: ``from echo_env import CallToolAction, EchoEnv``."""

from .client import EchoEnv
from .models import (
    CallToolAction,
    CallToolObservation,
    EchoObservation,
    EchoState,
    ListToolsAction,
    ListToolsObservation,
)

__all__ = [
    "CallToolAction",
    "CallToolObservation",
    "EchoEnv",
    "EchoObservation",
    "EchoState",
    "ListToolsAction",
    "ListToolsObservation",
]
