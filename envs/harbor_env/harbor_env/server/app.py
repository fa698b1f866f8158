"""ASGI app: ``uvicorn harbor_env.server.app:app``; settings from the environment:

``HARBOR_TASKS`` (a folder of Harbor task folders; default: the shipped tasks),
``HARBOR_ENGINE`` (``docker``, ``podman`` or an engine URL), ``HARBOR_BASE_IMAGE`` (passed to
each task's Dockerfile as ``BASE_IMAGE``), ``HARBOR_WARM`` (spare containers kept started per
task, default 1; 0: each episode starts its own), ``HARBOR_MAX_CONTAINERS`` (per task, 64),
``HARBOR_MAX_SESSIONS`` (256).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from openenv_train import Limits, create_app

from ..models import HarborState
from ..runtime import SHIPPED_TASKS, TaskRuntime
from .environment import HarborEnv


def make_app(runtime: TaskRuntime, max_sessions: int = 256):  # noqa: ANN201 - a FastAPI app
    """An app serving ``runtime``'s tasks (one ``HarborEnv`` per session)."""
    app = create_app(
        HarborEnv.bind(runtime),
        state_cls=HarborState,
        limits=Limits.from_env(max_sessions=max_sessions),
    )
    return with_runtime_shutdown(app, runtime)


def with_runtime_shutdown(app: Any, runtime: TaskRuntime) -> Any:
    """``app`` closing ``runtime``'s pools after its sessions at shutdown."""
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        async with inner(a) as state:  # the sessions close first, then their containers' pools
            yield state
        await asyncio.to_thread(runtime.close)

    app.router.lifespan_context = lifespan
    return app


runtime = TaskRuntime(
    os.environ.get("HARBOR_TASKS") or SHIPPED_TASKS,
    engine=os.environ.get("HARBOR_ENGINE", "docker"),
    base_image=os.environ.get("HARBOR_BASE_IMAGE") or None,
    warm=int(os.environ.get("HARBOR_WARM", "1")),
    max_containers=int(os.environ.get("HARBOR_MAX_CONTAINERS", "64")),
)
app = make_app(runtime, int(os.environ.get("HARBOR_MAX_SESSIONS", "256")))
