"""This env's entry in the openenv-train env catalog (registered in pyproject.toml)."""

from openenv_train.catalog import EnvEntry

CATALOG_ENTRY = EnvEntry(
    name="coding",
    description="Write a small Python function; unit tests run in a sandboxed subprocess "
    "(CPU, memory, output, wall-clock limits, no network); reward = fraction passed.",
    app="coding_env.server.app:app",
    client_path="coding_env.client:CodingEnv",
    action_path="coding_env.models:CodeAction",
    observation_path="coding_env.models:CodingObservation",
    state_path="coding_env.models:CodingState",
)
