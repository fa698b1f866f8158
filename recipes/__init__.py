"""Training recipes: each reads a YAML config (see configs/)."""
