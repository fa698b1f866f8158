"""Serve an ASGI app on the current event loop (the proxy and the tool bridge live beside the
objects they serve: the policy, or one env instance), on a free loopback port."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import uvicorn


class _QuietServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # the host program owns its signals
        yield


class LoopServer:
    """``await start()`` -> base URL; ``await stop()`` (idempotent) waits for the server to end."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.app, self.host, self.port = app, host, port
        self.url: str | None = None
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> str:
        if self._task is not None:
            return str(self.url)
        config = uvicorn.Config(
            self.app, host=self.host, port=self.port, log_level="warning", lifespan="off"
        )
        self._server = _QuietServer(config)
        self._task = asyncio.get_running_loop().create_task(self._server.serve())
        while not self._server.started:
            if self._task.done():
                self._task.result()
                raise RuntimeError(f"the server for {self.app!r} did not start")
            await asyncio.sleep(0.01)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://{self.host}:{port}"
        return self.url

    async def stop(self) -> None:
        server, task = self._server, self._task
        self._server = self._task = None
        self.url = None
        if server is not None and task is not None:
            server.should_exit = True
            await task
