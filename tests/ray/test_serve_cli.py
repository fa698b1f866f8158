"""``openenv-train serve APP --runtime ray --replicas N`` in a real subprocess (its own local Ray
cluster): URLs printed and serving, and Ctrl-C stops every process it started."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import psutil
import pytest
from cli_runs import cli
from processes import default_stop_signals
from ray_helpers import APP, wait_gone

pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parents[2]


def start_serving(replicas: int = 2) -> tuple[subprocess.Popen[str], list[str], list[int]]:
    """The CLI serving on its own local cluster: the process, its URLs, and every process below it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")}
    args = [
        "serve",
        APP,
        "--runtime",
        "ray",
        "--replicas",
        str(replicas),
        "--cpus-per-server",
        "0.25",
    ]
    proc = subprocess.Popen(
        cli() + args,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_stop_signals,  # Ctrl-C as at a terminal, however the run was started
    )
    urls: list[str] = []
    deadline = time.monotonic() + 180
    while len(urls) < replicas:
        line = proc.stdout.readline()
        if not line:
            proc.kill()
            pytest.fail(f"serve exited early: {proc.stderr.read()[-3000:]}")
        if line.startswith("http://"):
            urls.append(line.split()[0])
        assert time.monotonic() < deadline, "no URLs within 180 s"
    started = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
    assert any("raylet" in " ".join(psutil.Process(p).cmdline()) for p in started)
    return proc, urls, started


def assert_all_gone(started: list[int], urls: list[str]) -> None:
    left = wait_gone(started, timeout=30)
    assert not left, [" ".join(psutil.Process(p).cmdline())[:80] for p in left]
    for url in urls:
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/health", timeout=2)


def test_serve_on_ray_prints_urls_and_ctrl_c_stops_everything() -> None:
    proc, urls, started = start_serving()
    try:
        for url in urls:
            assert url.startswith("http://127.0.0.1:")
            assert httpx.get(f"{url}/health", timeout=5).status_code == 200
        proc.send_signal(signal.SIGINT)
        try:  # (serve bounds its own way out at 90 s, printing every thread's stack)
            code = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            code = None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read()
    assert code == 0, f"serve exited {code} after Ctrl-C; its stderr ends:\n{err[-6000:]}"
    assert "stopping the fleet" in err
    assert_all_gone(started, urls)


def test_a_killed_serve_leaves_nothing_behind() -> None:
    """SIGKILL: no finally runs; Ray's fate sharing and our reaper stop every process."""
    proc, urls, started = start_serving(replicas=1)
    proc.kill()
    proc.wait()
    assert_all_gone(started, urls)


def test_serve_on_ray_rejects_a_non_loopback_host() -> None:
    proc = subprocess.run(
        cli() + ["serve", APP, "--runtime", "ray", "--host", "0.0.0.0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "--host" in proc.stderr
