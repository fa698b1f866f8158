"""This env's entry in the openenv-train env catalog (registered in pyproject.toml)."""

from openenv_train.catalog import EnvEntry

CATALOG_ENTRY = EnvEntry(
    name="harbor",
    description="Terminal tasks in Harbor's format (task.toml, Dockerfile, tests/test.sh): "
    "one fresh hardened container per episode; run/read/write/submit tools; graded by the tests.",
    app="harbor_env.server.app:app",
    client_path="harbor_env.client:HarborClient",
    action_path="openenv_train.core.mcp_types:CallToolAction",
    observation_path="harbor_env.models:HarborObservation",
    state_path="harbor_env.models:HarborState",
    text_spec_path="harbor_env.text_spec:HarborTextSpec",
)
