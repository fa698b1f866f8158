"""The ported maze env served as its own app serves it (OpenEnv's ``max_concurrent_envs=1``), on
a 2x2 maze: the exit is two moves away, so a few-turn training run wins some episodes (+10) and
loses others (truncated or invalid, -1), rewards that differ within a GRPO group. The env's
8x8 default needs 14 moves, beyond a test's few turns."""

from __future__ import annotations

import numpy as np
from maze_env.models import MazeAction, MazeObservation
from maze_env.server.maze_env_environment import MazeEnvironment

from openenv_train.openenv import create_app

TWO_BY_TWO = np.array([[0, 0], [1, 0]])  # start (0, 0), exit (1, 1): right, then down

app = create_app(
    lambda: MazeEnvironment(maze_array=TWO_BY_TWO),
    MazeAction,
    MazeObservation,
    env_name="maze_env",
    max_concurrent_envs=1,
)
