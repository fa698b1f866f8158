"""``python -m openenv_train.server module:app`` (serve()) in a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import websockets
from ports import free_port
from processes import interrupt
from server_helpers import rpc, wait_until

pytestmark = pytest.mark.timeout(90)


async def test_module_entry_point_serves_an_app():
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent))
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv_train.server", "server_cli_app:app", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        try:
            return httpx.get(url + "/health").json()["status"] == "healthy"
        except httpx.TransportError:
            return False

    try:
        wait_until(healthy, timeout=30, what="server health")
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
            await rpc(ws, {"type": "reset", "data": {"seed": 4}})
            r = await rpc(ws, {"type": "step", "data": {"n": 1}})
            assert r["data"]["observation"]["total"] == 5
    finally:
        interrupt(proc)
    assert proc.returncode == 0
