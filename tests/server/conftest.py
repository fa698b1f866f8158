"""A real uvicorn server on 127.0.0.1 (OS-picked port) in a background thread, per test."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from openenv_train.server import uvicorn_kwargs

sys.path.insert(0, str(Path(__file__).parent))


class ServerThread:
    """Runs ``app`` with uvicorn in a daemon thread; ``url``/``ws_url`` once started."""

    def __init__(self, app: Any, **options: Any) -> None:
        kw = uvicorn_kwargs(**options)
        self.config = uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", **kw)
        self.server = uvicorn.Server(self.config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.ws_url = f"ws://127.0.0.1:{port}/ws"
        self.port = port
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        assert not self.thread.is_alive(), "server thread did not stop"


@pytest.fixture
def serve_app() -> Iterator[Callable[..., ServerThread]]:
    started: list[ServerThread] = []

    def start(app: Any, **options: Any) -> ServerThread:
        s = ServerThread(app, **options).start()
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    from server_envs import REG

    REG.reset()
    yield
    REG.release.set()  # never leave a blocked worker behind


async def rpc(ws: Any, frame: dict[str, Any] | str) -> dict[str, Any]:
    """Send one frame over /ws and return the decoded reply."""
    import json

    await ws.send(frame if isinstance(frame, str) else json.dumps(frame))
    return json.loads(await ws.recv())


def wait_until(
    predicate: Callable[[], bool], timeout: float = 15.0, what: str = "condition"
) -> None:
    """Poll until ``predicate()`` holds (a deadline, not a timing assert)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
