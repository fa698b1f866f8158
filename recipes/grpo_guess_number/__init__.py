"""GRPO on guess_number_env through TRL's environment_factory (MCP tools) with a tiny tool-calling model."""
