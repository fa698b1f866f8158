"""This env's entry in the openenv-train env catalog (registered in pyproject.toml; not part of the OpenEnv original)."""

from openenv_train.catalog import EnvEntry

CATALOG_ENTRY = EnvEntry(
    name="connect4",
    description="Connect4: two-player board game on a 6x7 grid, both sides played in turn (ported from OpenEnv, imports changed only).",
    app="connect4_env.server.app:app",
    client_path="connect4_env.client:Connect4Env",
    action_path="connect4_env.models:Connect4Action",
    observation_path="connect4_env.models:Connect4Observation",
    state_path="connect4_env.models:Connect4State",
)
