"""This env's entry in the openenv-train env catalog (registered in pyproject.toml)."""

from openenv_train.catalog import EnvEntry

CATALOG_ENTRY = EnvEntry(
    name="blackjack",
    description="BlackJack with OpenSpiel's rules: hit or stand against the dealer; reward +1/0/-1.",
    app="blackjack_env.server.app:app",
    client_path="blackjack_env.client:BlackjackEnv",
    action_path="blackjack_env.models:BlackjackAction",
    observation_path="blackjack_env.models:BlackjackObservation",
    state_path="blackjack_env.models:BlackjackState",
    text_spec_path="blackjack_env.text_spec:BlackjackTextSpec",
)
