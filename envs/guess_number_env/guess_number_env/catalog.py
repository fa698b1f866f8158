"""This env's entry in the openenv-train env catalog (registered in pyproject.toml)."""

from openenv_train.catalog import EnvEntry

CATALOG_ENTRY = EnvEntry(
    name="guess_number",
    description="Find a hidden integer with higher/lower feedback within a turn budget (binary "
    "search is optimal); typed actions and an MCP guess tool.",
    app="guess_number_env.server.app:app",
    client_path="guess_number_env.client:GuessNumberEnv",
    action_path="guess_number_env.models:GuessAction",
    observation_path="guess_number_env.models:GuessNumberObservation",
    state_path="guess_number_env.models:GuessNumberState",
    text_spec_path="guess_number_env.text_spec:GuessNumberTextSpec",
)
