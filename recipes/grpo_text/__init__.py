"""GRPO on any text env: the env app, its TextEnvSpec and the vocabulary come from the config."""
