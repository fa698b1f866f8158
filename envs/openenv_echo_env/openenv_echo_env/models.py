"""The wire types of this env, where openenv-train's tooling looks for them (our packaging:
OpenEnv's echo_env uses the MCP action and observation types as they are)."""

from openenv_train import CallToolAction, CallToolObservation, ListToolsAction, State

__all__ = ["CallToolAction", "CallToolObservation", "ListToolsAction", "State"]
