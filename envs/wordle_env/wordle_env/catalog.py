"""This env's entry in the openenv-train env catalog (registered in pyproject.toml)."""

from openenv_train.catalog import EnvEntry

CATALOG_ENTRY = EnvEntry(
    name="wordle",
    description="Wordle: find the five-letter word from G/Y/B letter feedback in six guesses; "
    "typed actions and MCP tools.",
    app="wordle_env.server.app:app",
    client_path="wordle_env.client:WordleEnv",
    action_path="wordle_env.models:WordleAction",
    observation_path="wordle_env.models:WordleObservation",
    state_path="wordle_env.models:WordleState",
)
