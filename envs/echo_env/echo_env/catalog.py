"""This env's entry in the openenv-train env catalog (registered in pyproject.toml)."""

from openenv_train.catalog import EnvEntry

CATALOG_ENTRY = EnvEntry(
    name="echo",
    description="MCP tool env that echoes messages back (the smoke test of every transport); reward = length / 10.",
    app="echo_env.server.app:app",
    client_path="echo_env.client:EchoEnv",
    action_path="echo_env.models:CallToolAction",
    observation_path="echo_env.models:EchoObservation",
    state_path="echo_env.models:EchoState",
)
