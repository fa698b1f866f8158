"""Fixtures of the harbor env tests: the shipped tasks' images built once per session, a server
of the shipped tasks in a child process, and a listing of the containers a run left."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from harbor_env import SHIPPED_TASKS, TaskRuntime

from openenv_train.runtime import LocalProcessProvider
from openenv_train.runtime import container_engine as ce

BASE_IMAGE = os.environ.get("OPENENV_TRAIN_BASE_IMAGE", "openenv-train-base:py3.11-bookworm")


def containers_of(run_id: str) -> list[str]:
    """Every container (any state) of a ``TaskRuntime`` run, by its run-id label."""
    client = ce.connect("docker")
    listing = client.api.containers(all=True, filters={"label": [f"{ce.LABEL_RUN_ID}={run_id}"]})
    return ce.names_in_listing(listing)


def containers_owned_by(pid: int) -> list[str]:
    client = ce.connect("docker")
    listing = client.api.containers(all=True, filters={"label": [f"{ce.LABEL_OWNER_PID}={pid}"]})
    return ce.names_in_listing(listing)


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
