"""The env playground at ``/web``: a page to play an env by hand in a browser.

The page is static (HTML, CSS, JS shipped in the package; nothing from the internet) and talks to
the server only over its existing routes: ``/metadata`` and ``/schema`` over HTTP, then one
``/ws`` session (``reset``, ``step``, ``state`` and, for MCP envs, ``mcp`` frames). Its routes sit
behind the same gate as every other route (token, limits). An env may ship a renderer for its
observations: a JS file that calls ``OpenEnvPlayground.registerRenderer(fn)``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastapi.responses import FileResponse, Response

#: ``create_app(web=None)`` serves the playground when this variable is "1" (``openenv-train
#: serve`` sets it on loopback); unset or "0": off.
WEB_ENV = "OPENENV_TRAIN_WEB"

STATIC = Path(__file__).parent / "static"
#: the files the playground page loads (nothing else under ``/web`` is served)
_FILES = {
    "playground.js": "text/javascript",
    "common.css": "text/css",
}


def web_enabled(web: bool | None = None) -> bool:
    """``web`` as given, else the ``OPENENV_TRAIN_WEB`` variable (off unless "1"): whether to
    serve the playground (an app with a renderer of its own asks this before passing it)."""
    if web is not None:
        return bool(web)
    value = os.environ.get(WEB_ENV, "0").strip().lower()
    if value not in ("0", "1", "", "false", "true"):
        raise ValueError(f"{WEB_ENV}={value!r}: use 1 to serve the playground at /web, 0 not to")
    return value in ("1", "true")


def check_renderer(renderer: str | Path | None) -> Path | None:
    """The renderer file, checked when the app is built (not when a browser first asks)."""
    if renderer is None:
        return None
    path = Path(renderer)
    if path.suffix != ".js" or not path.is_file():
        raise ValueError(
            f"web={str(path)!r}: a renderer must be an existing .js file (it draws the env's "
            "observations on the /web page); pass web=True for the page without one"
        )
    return path


def add_playground(app: Any, renderer: Path | None) -> None:
    """Add ``GET /web`` (the page), its static files and ``/web/renderer.js`` to ``app``."""

    @app.get("/web", include_in_schema=False)
    async def playground() -> Response:
        return FileResponse(STATIC / "playground.html", media_type="text/html")

    @app.get("/web/renderer.js", include_in_schema=False)
    async def observation_renderer() -> Response:
        if renderer is None:
            return Response("", media_type="text/javascript")
        return FileResponse(renderer, media_type="text/javascript")

    @app.get("/web/static/{name}", include_in_schema=False)
    async def static_file(name: str) -> Response:
        if name not in _FILES:
            return Response(status_code=404)
        return FileResponse(STATIC / name, media_type=_FILES[name])
