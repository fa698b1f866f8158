"""``runtime="venv"``: an env server under a real venv built from the env package's own
requirements (pip through this machine's index and cache), cached by their hash.

The venv cache lives in the system temp folder, shared across sessions and test processes (the
build is locked per hash): the first run builds the echo env's venv (~30 s from pip's cache),
every later one reuses it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest
from server_helpers import wait_until

from openenv_train.core.errors import ServerStartError
from openenv_train.runtime.env_venv import (
    env_package,
    prepare_env_venv,
    requirements_hash,
)

APP = "echo_env.server.app:app"
CACHE = Path(tempfile.gettempdir()) / "openenv-train-test-venvs"
pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def echo_venv():
    return prepare_env_venv(APP, cache_dir=CACHE)


def test_the_env_packages_own_requirements_plus_openenv_trains_core_ones() -> None:
    package = env_package("verifiers_env.server.app:app")
    names = [r.split(">")[0].split("=")[0].split("<")[0] for r in package.requirements]
    assert "verifiers" in names and "datasets" in names and "fastapi" in names
    assert "openenv-train" not in names  # linked, not installed
    assert {p.name for p in package.links} == {"verifiers_env", "vf_arithmetic"}


def test_the_venv_holds_its_requirements_and_none_of_the_trainers(echo_venv) -> None:
    run = [str(echo_venv.python), "-c"]
    env = {**os.environ, **echo_venv.environ()}
    assert Path(sys.prefix).resolve() != echo_venv.python.parent.parent.resolve()
    probe = "import importlib.util as u; print(u.find_spec('torch') is None, u.find_spec('fastapi') is not None)"
    assert subprocess.run(
        [*run, probe], env=env, capture_output=True, text=True
    ).stdout.split() == [
        "True",
        "True",
    ]
    where = "import openenv_train, echo_env; print(openenv_train.__file__, echo_env.__file__)"
    out = subprocess.run([*run, where], env=env, capture_output=True, text=True, check=True)
    import echo_env

    import openenv_train

    # the trainer's own copies, reached through the link folder
    assert [str(Path(p).resolve()) for p in out.stdout.split()] == [
        str(Path(openenv_train.__file__).resolve()),
        str(Path(echo_env.__file__).resolve()),
    ]


def test_a_second_start_reuses_the_cached_venv(echo_venv) -> None:
    marker = echo_venv.python.parent.parent / ".complete"
    stamp = marker.stat().st_mtime_ns
    again = prepare_env_venv(APP, cache_dir=CACHE)
    assert again == echo_venv and marker.stat().st_mtime_ns == stamp


def test_the_cache_key_is_the_requirements_and_the_python() -> None:
    a = requirements_hash(["fastapi>=0.110", "httpx>=0.27"])
    assert a == requirements_hash(["httpx>=0.27", "fastapi>=0.110"])  # order does not matter
    assert a != requirements_hash(["fastapi>=0.111", "httpx>=0.27"])


def test_a_server_in_the_venv_serves_sessions(echo_venv) -> None:
    from openenv_train.client import MCPToolClient
    from openenv_train.runtime import start_servers

    with start_servers(APP, 1, runtime="venv", cache_dir=CACHE, startup_timeout=120) as group:
        (provider,) = group
        assert provider.python == str(echo_venv.python)
        cmdline = Path(f"/proc/{provider.pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[0].decode() == str(echo_venv.python)
        with MCPToolClient(group.base_urls[0], mode="simulation").sync() as client:
            client.reset()  # a WebSocket session on the venv's server
            assert client.call_tool("echo_message", message="hi") == "hi"


def test_requirements_that_are_pip_options_are_refused() -> None:
    with pytest.raises(ValueError, match="--index-url"):
        prepare_env_venv(APP, requirements=["--index-url=http://x"], cache_dir=CACHE)


def test_a_requirement_pip_cannot_satisfy_fails_with_pips_words(tmp_path) -> None:
    with pytest.raises(ServerStartError, match="env venv failed") as err:
        prepare_env_venv(APP, requirements=["pydantic<0"], cache_dir=tmp_path)
    assert "pydantic" in str(err.value)
    assert not list((tmp_path / "venvs").glob("*/bin"))  # nothing half-built is kept


def test_serve_venv_runs_the_server_under_the_venvs_python(echo_venv) -> None:
    exe = str(Path(sys.executable).with_name("openenv-train"))
    cmd = [exe, "serve", APP, "--venv", "--venv-cache", str(CACHE), "--port", "0"]
    with tempfile.TemporaryFile() as out:
        server = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        try:

            def banner() -> str:
                out.seek(0)
                return out.read().decode()

            wait_until(lambda: "/health" in banner(), timeout=120, what="serve's banner")
            url = banner().split("serving " + APP + " at ")[1].split()[0]

            def healthy() -> bool:  # the banner comes before uvicorn listens: refused meanwhile
                try:
                    return httpx.get(url + "/health").status_code == 200
                except httpx.ConnectError:
                    return False

            wait_until(healthy, timeout=60, what="health")
            cmdline = Path(f"/proc/{server.pid}/cmdline").read_bytes().split(b"\0")
            assert cmdline[0].decode() == str(echo_venv.python)  # the process became the venv's
        finally:
            server.terminate()
            server.wait(timeout=30)
