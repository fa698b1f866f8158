"""Tiny ASGI apps the runtime tests serve in subprocesses (imported by the launcher by path)."""

from __future__ import annotations

import json
import os


async def _send_json(send, status: int, body: object) -> None:
    raw = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": raw})


async def app(scope, receive, send):
    """``/health`` -> healthy; ``/info`` -> pid, parent pid and the env var ``RT_MARK``."""
    if scope["type"] == "lifespan":
        while True:
            msg = await receive()
            if msg["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif msg["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["path"] == "/health":
        await _send_json(send, 200, {"status": "healthy"})
    elif scope["path"] == "/info":
        await _send_json(
            send, 200, {"pid": os.getpid(), "ppid": os.getppid(), "mark": os.environ.get("RT_MARK")}
        )
    else:
        await _send_json(send, 404, {"detail": "not found"})


async def never_healthy(scope, receive, send):
    """Serves, but ``/health`` always answers 503."""
    if scope["type"] == "lifespan":
        return
    await _send_json(send, 503, {"status": "starting"})
