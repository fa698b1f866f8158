"""A server in a container refuses the session past its bound with ``CAPACITY_REACHED``, on
Docker and Podman (issue 35): ``validate`` against it passes its capacity check. Docker's port
proxy spends six descriptors per connection under its daemon's descriptor limit and stopped
listening past it (a dropped handshake, then refused connections); ``ContainerProvider`` caps the
server's ``max_sessions`` from that limit and the container's memory (``runtime.capacity``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_train.cli import validate
from openenv_train.runtime import ContainerProvider, capacity
from openenv_train.server.limits import Limits
from openenv_train.server.session_cap import CAP_ENV, apply_session_cap

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(Path(__file__).parent))


def test_the_bound_follows_the_proxy_and_memory_limits() -> None:
    assert capacity.session_bound() == capacity.DEFAULT_SESSIONS
    assert capacity.session_bound(proxy_nofile=20_000) == 3000  # 10% spare, 6 fds each
    assert capacity.session_bound(mem_limit_bytes=capacity.parse_bytes("256m")) == 1024
    assert capacity.session_bound(proxy_nofile=10) == 1
    assert capacity.parse_bytes("1g") == 2**30 and capacity.parse_bytes(512) == 512
    with pytest.raises(ValueError, match="mem_limit"):
        capacity.parse_bytes("lots")


def test_the_cap_only_lowers_what_the_app_chose() -> None:
    assert apply_session_cap(Limits(max_sessions=4096), {CAP_ENV: "3000"}).max_sessions == 3000
    assert apply_session_cap(Limits(max_sessions=256), {CAP_ENV: "3000"}).max_sessions == 256
    assert apply_session_cap(Limits(max_sessions=256), {}).max_sessions == 256
    with pytest.raises(ValueError, match=CAP_ENV):
        apply_session_cap(Limits(), {CAP_ENV: "zero"})


def test_the_daemon_limit_is_read_from_proc(tmp_path: Path) -> None:
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "comm").write_text("dockerd\n")
    (tmp_path / "7" / "limits").write_text(
        "Limit                     Soft Limit           Hard Limit           Units\n"
        "Max open files            20000                20000                files\n"
    )
    assert capacity.daemon_nofile("dockerd", str(tmp_path)) == 20000
    assert capacity.daemon_nofile("podman", str(tmp_path)) is None


@pytest.fixture(scope="module", params=["docker", "podman"])
def served(request: pytest.FixtureRequest) -> Iterator[ContainerProvider]:
    from rt_containers import BASE_IMAGE, IMAGE_PREFIX

    from openenv_train.cli.env_build import build_image

    tag = f"{IMAGE_PREFIX}/echo_env:capacity"
    build_image(ROOT / "envs" / "echo_env", tag, base_image=BASE_IMAGE, engine=request.param)
    with ContainerProvider(tag, engine=request.param, startup_timeout=120) as provider:
        yield provider


def test_validate_passes_its_capacity_check(served: ContainerProvider) -> None:
    checks = validate.runtime_checks(served.base_url or "", 5000)
    found = {c.name: c for c in checks}
    check = found["capacity -> CAPACITY_REACHED"]
    assert check.ok, check
    assert all(c.ok is not False for c in checks), checks
