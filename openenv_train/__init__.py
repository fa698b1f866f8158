"""openenv-train: typed RL environments and a batched rollout bridge into GRPO trainers.

Everything an env author needs is one import away::

    from openenv_train import Action, Observation, State, Environment, create_app, EnvClient

The names load lazily (module ``__getattr__``): ``import openenv_train`` imports no web server,
HTTP client or torch, and ``from openenv_train import Action`` loads only the protocol models.
The submodule paths (``openenv_train.core``, ``.server``, ``.client``) keep working. The rest
has its own home: rubrics ``openenv_train.core.rubrics``, the env catalog
``openenv_train.catalog``, LLM judges ``openenv_train.judge``, and OpenEnv's own spellings
(``AutoEnv``, ``HTTPEnvServer``, ``LocalDockerProvider``, evals...) ``openenv_train.openenv``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_names

__version__ = "0.1.0"

# submodule -> the names it lends the top level; the one list of what ``openenv_train`` exports
_EXPORTS: dict[str, tuple[str, ...]] = {
    "core": (
        # models: what an env's typed action, observation and state subclass
        "Action",
        "EnvironmentMetadata",
        "Observation",
        "State",
        "StepResult",
        # MCP tool models, for envs whose actions are tool calls
        "CallToolAction",
        "CallToolObservation",
        "ListToolsAction",
        "ListToolsObservation",
        "Tool",
        "ToolError",
        # typed errors: what a server answers with and a client raises
        "ActionValidationError",
        "CapacityReachedError",
        "ConnectionLostError",
        "EnvExecutionError",
        "EnvFactoryError",
        "EnvInfrastructureError",
        "EnvServerError",
        "ErrorCode",
        "InfrastructureError",
        "InvalidJSONError",
        "OpenEnvTrainError",
        "RequestTimeoutError",
        "ServerStartError",
        "SessionClosedError",
        "SessionError",
        "UnknownMessageTypeError",
    ),
    "core.mcp_types": ("TypedOrToolAction",),
    "server": (
        "Environment",
        "Limits",
        "MCPEnvironment",
        "NoEpisodeError",
        "Transform",
        "create_app",
        "tool",
    ),
    "client": ("EnvClient", "MCPToolClient", "ServerUnreachableError", "ToolCallError"),
}
__getattr__, __dir__, _HOME = lazy_names(__name__, _EXPORTS)

if TYPE_CHECKING:  # what editors see; tests/core/test_package.py keeps it equal to _EXPORTS
    from .client import EnvClient, MCPToolClient, ServerUnreachableError, ToolCallError  # noqa: F401
    from .core import (  # noqa: F401
        Action,
        ActionValidationError,
        CallToolAction,
        CallToolObservation,
        CapacityReachedError,
        ConnectionLostError,
        EnvExecutionError,
        EnvFactoryError,
        EnvInfrastructureError,
        EnvironmentMetadata,
        EnvServerError,
        ErrorCode,
        InfrastructureError,
        InvalidJSONError,
        ListToolsAction,
        ListToolsObservation,
        Observation,
        OpenEnvTrainError,
        RequestTimeoutError,
        ServerStartError,
        SessionClosedError,
        SessionError,
        State,
        StepResult,
        Tool,
        ToolError,
        UnknownMessageTypeError,
    )
    from .core.mcp_types import TypedOrToolAction  # noqa: F401
    from .server import (  # noqa: F401
        Environment,
        Limits,
        MCPEnvironment,
        NoEpisodeError,
        Transform,
        create_app,
        tool,
    )


__all__ = sorted([*_HOME, "__version__"])
