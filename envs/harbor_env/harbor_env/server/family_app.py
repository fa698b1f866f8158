"""ASGI app serving the generated task family (``harbor_env.family``), nothing to prepare:
``uvicorn harbor_env.server.family_app:app`` or ``env.app`` of a training config
(``configs/grpo_harbor_family_cpu.yaml``).

The family is written to a fresh temporary folder (removed when the process exits). At startup,
before the server answers ``/health``, the tasks' image is built from the engine's local base
image (``HARBOR_BASE_IMAGE`` to pick another; an image of the same contents is reused) and every
task's warm pool is started, so the first episodes do not wait on a build. The other settings
are ``harbor_env.server.app``'s: ``HARBOR_ENGINE``, ``HARBOR_WARM`` (default 1),
``HARBOR_MAX_CONTAINERS`` (per task, 64), ``HARBOR_MAX_SESSIONS`` (256).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from ..family import write_family
from ..runtime import TaskRuntime
from .app import make_app


def with_startup(app: Any, runtime: TaskRuntime, folder: Path | None = None) -> Any:
    """``app`` building ``runtime``'s images and starting its pools before it serves (a failure
    stops the startup, and the pools already started are closed); ``folder`` (the tasks') is
    removed at shutdown, after the runtime."""
    inner = app.router.lifespan_context

    def prepare() -> None:
        runtime.build_all()
        for name in sorted(runtime.tasks):
            runtime.pool(name)

    @asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        try:
            async with inner(a) as state:  # its exit closes the runtime, also after a failure
                await asyncio.to_thread(prepare)
                yield state
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

    app.router.lifespan_context = lifespan
    return app


folder = Path(tempfile.mkdtemp(prefix="harbor-family-"))
atexit.register(shutil.rmtree, folder, True)  # a process that never served (imported only)
write_family(folder)
runtime = TaskRuntime(
    folder,
    engine=os.environ.get("HARBOR_ENGINE", "docker"),
    base_image=os.environ.get("HARBOR_BASE_IMAGE") or None,
    warm=int(os.environ.get("HARBOR_WARM", "1")),
    max_containers=int(os.environ.get("HARBOR_MAX_CONTAINERS", "64")),
)
app = with_startup(
    make_app(runtime, int(os.environ.get("HARBOR_MAX_SESSIONS", "256"))), runtime, folder
)
