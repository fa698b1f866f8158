"""ASGI app of the agent-inside-the-env variant: ``uvicorn harbor_env.server.agent_app:app``
(the same ``HARBOR_*`` settings as ``harbor_env.server.app``; ``HARBOR_AGENT_*`` for the agent)."""

from __future__ import annotations

import os

from openenv_train import Limits, State, create_app
from openenv_train.agents.harness_env import HarnessAction, HarnessObservation

from ..agent_env import HarborAgentEnv
from ..runtime import SHIPPED_TASKS, TaskRuntime
from .app import with_runtime_shutdown

runtime = TaskRuntime(
    os.environ.get("HARBOR_TASKS") or SHIPPED_TASKS,
    engine=os.environ.get("HARBOR_ENGINE", "docker"),
    base_image=os.environ.get("HARBOR_BASE_IMAGE") or None,
    warm=int(os.environ.get("HARBOR_WARM", "1")),
    max_containers=int(os.environ.get("HARBOR_MAX_CONTAINERS", "64")),
)
app = with_runtime_shutdown(
    create_app(
        HarborAgentEnv.bind(runtime),
        HarnessAction,
        HarnessObservation,
        State,
        limits=Limits.from_env(max_sessions=int(os.environ.get("HARBOR_MAX_SESSIONS", "64"))),
    ),
    runtime,
)
