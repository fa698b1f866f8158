"""Fixtures of the harbor env tests: the shipped tasks' images built once per session, a server
of the shipped tasks in a child process (the shared helpers are in harbor_support.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from harbor_env import SHIPPED_TASKS, TaskRuntime
from harbor_support import BASE_IMAGE, containers_of, containers_owned_by

from openenv_train.runtime import LocalProcessProvider
from openenv_train.runtime import container_engine as ce


@pytest.fixture(scope="session")
def built() -> dict[str, str]:
    """The shipped tasks' images (skipped when already built: tags hash the contents)."""
    try:
        client = ce.connect("docker")
        client.api.inspect_image(BASE_IMAGE)
    except Exception as err:
        pytest.fail(
            f"no docker engine or no base image {BASE_IMAGE} ({err}): run "
            "scripts/container_engines.sh",
            pytrace=False,
        )
    rt = TaskRuntime(SHIPPED_TASKS, base_image=BASE_IMAGE)
    return rt.build_all()


@pytest.fixture
def runtime(built) -> Iterator[TaskRuntime]:
    """An in-process runtime of the shipped tasks; checks it left no container behind."""
    rt = TaskRuntime(SHIPPED_TASKS, base_image=BASE_IMAGE, warm=1)
    yield rt
    rt.close()
    assert containers_of(rt.run_id) == []


@pytest.fixture(scope="module")
def harbor_url(built) -> Iterator[str]:
    """A harbor env server of the shipped tasks in a child process (one spare per task)."""
    env = {"HARBOR_BASE_IMAGE": BASE_IMAGE, "HARBOR_WARM": "1"}
    server = LocalProcessProvider(
        "harbor_env.server.app:app", env=env, startup_timeout=120, stop_timeout=60
    )
    with server:
        pid = server.pid
        yield server.base_url
    assert pid is not None and containers_owned_by(pid) == []
