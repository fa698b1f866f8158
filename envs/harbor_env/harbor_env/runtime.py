"""``TaskRuntime``: what one server shares between its sessions: the tasks, the engine, each
task's image (built once) and a warm pool of single-use containers per task.

``warm`` spares per task are kept started (``EnvPool(single_use=True)``): an episode takes one,
a new one starts behind it, and the used one is removed when the episode ends, so nothing of one
episode reaches the next. ``warm=0`` starts each episode's container on demand (the cold path).
A burst of episodes grows a task's pool up to ``max_containers``; spares beyond ``warm`` are
stopped after 10 s idle.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import threading
import uuid
from pathlib import Path
from typing import Any

from openenv_train.cli.env_build import local_base_image
from openenv_train.runtime import container_engine as ce
from openenv_train.runtime.env_pool import EnvPool, Lease

from .errors import TaskInfraError
from .sandbox import TaskContainer, build_task_image
from .task import HarborTask, TaskFormatError, load_tasks, with_users

#: The folder of the tasks this package ships.
SHIPPED_TASKS = Path(__file__).parent / "tasks"


class TaskRuntime:
    """Tasks from ``tasks_dir`` run on ``engine``; images build with ``base_image`` as the
    ``BASE_IMAGE`` build argument (None: the engine's local base image when it has one, as
    ``openenv-train build`` picks it, else the Dockerfile's own default)."""

    def __init__(
        self,
        tasks_dir: str | Path = SHIPPED_TASKS,
        *,
        engine: str = "docker",
        base_image: str | None = None,
        warm: int = 1,
        max_containers: int = 64,
        acquire_timeout_s: float = 120.0,
    ) -> None:
        if not (isinstance(warm, int) and warm >= 0):
            raise ValueError(f"warm: spare containers per task, an int >= 0, got {warm!r}")
        if not (isinstance(max_containers, int) and max_containers >= 1):
            raise ValueError(f"max_containers: an int >= 1, got {max_containers!r}")
        self.tasks: dict[str, HarborTask] = load_tasks(tasks_dir)
        self.engine, self.base_image = engine, base_image
        self.warm, self.max_containers = warm, max_containers
        self.acquire_timeout_s = acquire_timeout_s
        self.run_id = f"harbor{uuid.uuid4().hex[:8]}"
        self._client: Any = None
        self._pools: dict[str, EnvPool] = {}
        self._images: dict[str, str] = {}
        self._lock = threading.Lock()
        self._task_locks: dict[str, threading.Lock] = {
            name: threading.Lock() for name in self.tasks
        }
        self._closed = False
        #: where sessions run their blocking engine calls (asyncio's default pool has few threads)
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=64, thread_name_prefix="harbor-exec"
        )

    async def call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` on :attr:`executor`, awaited."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, functools.partial(fn, *args, **kwargs))

    @property
    def client(self) -> Any:
        """The engine's client; its socket timeout outlasts the longest exec of any task."""
        if self._client is None:
            longest = max(max(t.agent_timeout_s, t.verifier_timeout_s) for t in self.tasks.values())
            try:
                self._client = ce.connect(self.engine, timeout=longest + 60)
            except Exception as err:
                raise TaskInfraError(f"cannot reach the {self.engine} engine: {err}") from err
        return self._client

    def task(self, name: str) -> HarborTask:
        if name not in self.tasks:
            raise TaskFormatError(f"task_id: no task {name!r}; tasks: {sorted(self.tasks)}")
        return self.tasks[name]

    def image(self, name: str) -> str:
        """The task's image, built the first time it is asked for."""
        with self._task_locks[name]:
            if name not in self._images:
                if self.base_image is None:  # the engine's local base image: nothing pulled
                    self.base_image = local_base_image(self.engine)
                tag = build_task_image(self.client, self.task(name), base_image=self.base_image)
                try:
                    user = (self.client.api.inspect_image(tag).get("Config") or {}).get("User")
                except Exception as err:
                    raise TaskInfraError(f"inspecting image {tag} failed: {err}") from err
                self.tasks[name] = with_users(self.tasks[name], user or None)
                self._images[name] = tag
            return self._images[name]

    def build_all(self) -> dict[str, str]:
        """Build every task's image now (they share layers; unchanged ones are skipped)."""
        return {name: self.image(name) for name in self.tasks}

    def pool(self, name: str) -> EnvPool:
        with self._task_locks[name]:
            pool = self._pools.get(name)
        if pool is not None:
            return pool
        image, task = self.image(name), self.task(name)
        pool = EnvPool(
            lambda: TaskContainer(image, task, engine=self.engine, run_id=self.run_id),
            min_size=self.warm,
            max_size=self.max_containers,
            single_use=True,
            check_interval=1.0,
            idle_timeout=10.0,  # spares grown in a burst beyond ``warm`` go after 10 s idle
        )
        try:
            pool.start()
        except Exception as err:
            raise TaskInfraError(f"task {name}: its containers did not start: {err}") from err
        with self._lock:
            if self._closed:
                pool.close()
                raise TaskInfraError("the task runtime is closed")
            other = self._pools.setdefault(name, pool)
        if other is not pool:
            pool.close()
        return other

    def lease(self, name: str) -> Lease:
        """A fresh container of task ``name`` (blocking; call it off the event loop)."""
        pool = self.pool(name)
        try:
            return pool.acquire(timeout=self.acquire_timeout_s)
        except Exception as err:
            raise TaskInfraError(f"task {name}: no container within the time: {err}") from err

    def _remove_all(self) -> None:
        """Remove every container of this run (by its run-id label), 16 at a time."""
        if self._client is None:
            return
        try:
            listing = self._client.api.containers(
                all=True, filters={"label": [f"{ce.LABEL_RUN_ID}={self.run_id}"]}
            )
        except Exception:
            return  # the pools still stop theirs, one by one

        def remove(name: str) -> None:
            with contextlib.suppress(Exception):
                ce.remove_verified(self._client, name)

        with concurrent.futures.ThreadPoolExecutor(16) as ex:
            list(ex.map(remove, ce.names_in_listing(listing)))

    def close(self) -> None:
        """Stop every pool (each container's removal verified)."""
        with self._lock:
            self._closed = True
            pools, self._pools = list(self._pools.values()), {}
        self._remove_all()  # in parallel first: a pool stops its containers one by one
        if pools:
            with concurrent.futures.ThreadPoolExecutor(len(pools)) as ex:
                list(ex.map(EnvPool.close, pools))
        self.executor.shutdown(wait=False, cancel_futures=True)
