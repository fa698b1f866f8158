"""Each env is a pip-installable package whose app ``uvicorn <name>.server.app:app`` serves."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
ENVS = {
    "echo_env": "openenv-train-echo-env",
    "blackjack_env": "openenv-train-blackjack-env",
    "guess_number_env": "openenv-train-guess-number-env",
    "wordle_env": "openenv-train-wordle-env",
    "coding_env": "openenv-train-coding-env",
}


@pytest.mark.parametrize("name", list(ENVS))
def test_installed_as_a_distribution_that_needs_openenv_train(name):
    dist = importlib.metadata.distribution(ENVS[name])
    assert any(re.match(r"openenv-train\b", r) for r in dist.requires or []), dist.requires
    module = __import__(name)
    assert Path(module.__file__).resolve().is_relative_to(ROOT / "envs" / name)


@pytest.mark.parametrize("name", list(ENVS))
def test_dockerfile_takes_the_base_image_as_a_build_arg(name):
    text = (ROOT / "envs" / name / "Dockerfile").read_text()
    assert "ARG BASE_IMAGE=python:3.11-slim" in text
    assert "FROM ${BASE_IMAGE}" in text
    assert f"{name}.server.app:app" in text and "USER 10001" in text


@pytest.mark.parametrize("name", list(ENVS))
def test_uvicorn_command_line_serves_the_app(name):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            f"{name}.server.app:app",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        url = None
        while url is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                break
            found = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", line)
            url = found.group(1) if found else None
        assert url, f"uvicorn did not start {name}"
        with httpx.Client(base_url=url, timeout=10) as http:
            assert http.get("/health").json()["status"] == "healthy"
            assert http.get("/metadata").json()["name"] == name
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


async def test_connect_to_starts_and_stops_a_server():
    from echo_env import EchoEnv

    from openenv_train.runtime import LocalProcessProvider, connect_to

    provider = LocalProcessProvider("echo_env.server.app:app", startup_timeout=120)
    client = await connect_to(provider, EchoEnv)
    url = client.base_url
    try:
        assert (await client.reset()).observation.echoed_message == "Echo environment ready!"
        assert await client.call_tool("echo_message", message="local") == "local"
    finally:
        await client.close()
    with pytest.raises(httpx.TransportError):  # close() stopped the server it started
        httpx.get(url + "/health", timeout=5)
