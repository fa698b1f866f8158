"""This env's entry in the openenv-train env catalog (registered in pyproject.toml; not part of the OpenEnv original)."""

from openenv_train.catalog import EnvEntry

CATALOG_ENTRY = EnvEntry(
    name="maze",
    description="Maze: reach the exit of an 8x8 gridworld with walls (ported from OpenEnv, imports changed only).",
    app="maze_env.server.app:app",
    client_path="maze_env.client:MazeEnv",
    action_path="maze_env.models:MazeAction",
    observation_path="maze_env.models:MazeObservation",
    state_path="maze_env.models:MazeState",
)
