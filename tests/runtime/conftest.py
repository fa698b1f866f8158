"""Fixtures of the runtime tests: env images built once per session, leak checks.

Container tests run against the real engines; `scripts/container_engines.sh` installs and starts
them (CI runs it). An engine that does not answer fails the test with that hint: no skip.
"""

from __future__ import annotations

import time

import psutil
import pytest
from processes import excluding_zygotes, exited
from rt_containers import BASE_IMAGE, ENGINES, IMAGE_PREFIX, ROOT, engine_client, ours

from openenv_train.runtime import container_engine as ce


@pytest.fixture(scope="session")
def built_images(tmp_path_factory) -> dict[tuple[str, str], str]:
    return {}


@pytest.fixture
def image_of(built_images):
    """``image_of(engine, env)``: the env's image on that engine, built once this session."""
    from openenv_train.cli.env_build import build_image

    def get(engine: str, env: str = "echo_env") -> str:
        key = (engine, env)
        if key not in built_images:
            tag = f"{IMAGE_PREFIX}/{env}:latest"
            engine_client(engine)
            client = ce.connect(engine)
            try:
                client.api.inspect_image(BASE_IMAGE)
            except Exception:
                pytest.fail(
                    f"no base image {BASE_IMAGE} on {engine}: run scripts/container_engines.sh",
                    pytrace=False,
                )
            build_image(ROOT / "envs" / env, tag, base_image=BASE_IMAGE, engine=engine)
            built_images[key] = tag
        return built_images[key]

    return get


@pytest.fixture
def no_leaks():
    """Asserts the test left no container of this process on either engine, and no child process."""
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    for engine in ENGINES:
        left = ours(engine_client(engine))
        assert not left, f"containers left behind on {engine}: {left}"
    deadline = time.monotonic() + 5  # a child being reaped right now may take a moment
    while True:
        extra = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
        extra = [p for p in excluding_zygotes(extra) if not exited(p.pid)]
        if not extra or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not extra, f"processes left behind: {[p.pid for p in extra]}"
