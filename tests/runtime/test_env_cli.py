"""The env author's path as users run it: init -> own tests -> build -> validate -> serve."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from cli_runs import run_cli
from ports import free_port
from processes import default_stop_signals
from rt_containers import BASE_IMAGE, IMAGE_PREFIX, ROOT, engine_client

from openenv_train.cli.dockerfile_writer import check as check_dockerfile
from openenv_train.runtime import container_engine as ce

pytestmark = pytest.mark.usefixtures("no_leaks")
NAME = "my_counter"


def cli(*args: str, cwd: Path = ROOT, env: dict | None = None, timeout: float = 600):
    return run_cli(list(args), cwd, timeout, **(env or {}))


@pytest.fixture(scope="module")
def env_dir(tmp_path_factory) -> Path:
    parent = tmp_path_factory.mktemp("init")
    proc = cli("init", NAME, "--dir", str(parent))
    assert proc.returncode == 0, proc.stderr
    return parent / NAME


@pytest.fixture(scope="module")
def image(env_dir) -> str:
    tag = f"{IMAGE_PREFIX}/{NAME}:latest"
    proc = cli("build", str(env_dir), "--tag", tag, "--base-image", BASE_IMAGE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"built {tag}" in proc.stdout and "MB" in proc.stdout and "layers" in proc.stdout
    return tag


def test_init_writes_a_package_that_passes_its_own_tests(env_dir):
    for rel in ("pyproject.toml", "README.md", "Dockerfile", f"{NAME}/models.py",
                f"{NAME}/client.py", f"{NAME}/server/app.py", f"tests/test_{NAME}.py"):  # fmt: skip
        assert (env_dir / rel).is_file(), rel
    assert check_dockerfile((env_dir / "Dockerfile").read_text()) == []
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=env_dir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout[-3000:]


def test_the_repo_envs_dockerfiles_follow_the_rules():
    from openenv_train.cli.dockerfile_writer import render

    envs = sorted(p.name for p in (ROOT / "envs").iterdir() if (p / "pyproject.toml").is_file())
    assert len(envs) >= 6, envs
    for env in envs:  # every env package's image comes from the one template
        text = (ROOT / "envs" / env / "Dockerfile").read_text()
        assert check_dockerfile(text) == [] and text == render(env, f"envs/{env}")
    broken = "FROM python:3.11\nCOPY .venv /opt/venv\nCOPY x /opt/venv\n"
    problems = " ".join(check_dockerfile(broken))
    for words in ("multi-stage", "BASE_IMAGE", "exactly one layer", "USER", "HEALTHCHECK"):
        assert words in problems


def test_the_built_image_validates_with_hardening(image):
    proc = cli("validate", image, "--json", "--max-probe", "0")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["passed"], proc.stdout
    names = {c["name"]: c["ok"] for c in report["checks"]}
    for check in ("venv in exactly one layer", "CapBnd zero", "read-only root", "runs non-root",
                  "ws step", "bad frame -> error code", "session survives a bad frame"):  # fmt: skip
        assert names[check] is True, check


def test_validate_path_runs_static_and_runtime_checks_including_capacity(env_dir):
    proc = cli("validate", str(env_dir), "--json", env={"MAX_SESSIONS": "8"})
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["passed"], proc.stdout
    names = {c["name"]: c for c in report["checks"]}
    assert names["capacity -> CAPACITY_REACHED"]["ok"] is True
    assert names["Dockerfile"]["ok"] and names[f"import {NAME}.models"]["ok"]


def test_validate_fails_loudly():
    down = cli("validate", f"http://127.0.0.1:{free_port()}")
    assert down.returncode == 1 and "FAIL" in down.stdout
    missing = cli("validate", "openenv-train-test/never-built:nope")
    assert missing.returncode == 2 and "never-built" in missing.stderr


@pytest.fixture(scope="module")
def podman_image(env_dir, image) -> str:
    """The image built on Docker, built again by Podman's own builder."""
    proc = cli(
        "build", str(env_dir), "--tag", image, "--base-image", BASE_IMAGE, "--engine", "podman"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return image


@pytest.mark.parametrize("engine", ["docker", "podman"])
@pytest.mark.parametrize(
    "stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name
)
def test_serve_in_a_container_and_any_stop_signal_removes_it(engine, stop, env_dir, request):
    """Issue 22 #4: SIGTERM and SIGHUP left the container serving (only Ctrl-C removed it)."""
    image = request.getfixturevalue("podman_image" if engine == "podman" else "image")
    port = free_port()
    exe = shutil.which("openenv-train", path=str(Path(sys.executable).parent))
    server = subprocess.Popen(
        [exe, "serve", str(env_dir), "--runtime", engine, "--image", image, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_stop_signals,  # a serve started from a terminal
    )
    try:
        line = server.stdout.readline()
        assert f"http://127.0.0.1:{port}" in line, server.stderr.read()[-2000:]
        assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
    finally:
        server.send_signal(stop)
        assert server.wait(timeout=60) == 130
    client = engine_client(engine)
    listing = client.api.containers(
        all=True, filters={"label": [f"{ce.LABEL_OWNER_PID}={server.pid}"]}
    )
    assert listing == []


def test_serve_a_folder_as_a_local_process(env_dir):
    port = free_port()
    exe = shutil.which("openenv-train", path=str(Path(sys.executable).parent))
    server = subprocess.Popen([exe, "serve", str(env_dir), "--port", str(port)], cwd="/")
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.2)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)


def test_cli_mistakes_exit_non_zero_with_the_fix():
    bad = cli("init", "My-Env")
    assert bad.returncode == 2 and "package name" in bad.stderr
    nodir = cli("build", "/nonexistent/env")
    assert nodir.returncode == 2 and "not a folder" in nodir.stderr
    noimg = cli("serve", "echo_env.server.app:app", "--runtime", "docker")
    assert noimg.returncode == 2 and "--image" in noimg.stderr
    for cmd in ("init", "serve", "build", "validate"):
        assert cli(cmd, "--help").returncode == 0
