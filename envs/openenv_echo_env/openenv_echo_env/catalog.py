"""This env's entry in the openenv-train env catalog (registered in pyproject.toml)."""

from openenv_train.catalog import EnvEntry

CATALOG_ENTRY = EnvEntry(
    name="openenv_echo",
    description="OpenEnv's echo_env as published (FastMCP tools echo_message, echo_with_length), "
    "ported by changing imports only.",
    app="openenv_echo_env.server.app:app",
    client_path="openenv_echo_env.client:EchoEnv",
    action_path="openenv_echo_env.models:CallToolAction",
    observation_path="openenv_echo_env.models:CallToolObservation",
)
