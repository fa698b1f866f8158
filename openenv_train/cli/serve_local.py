"""``openenv-train serve APP`` on this machine, the way ``uvicorn APP`` behaves.

``my_env:app`` is imported from the app folder (``--app-dir``, default the current folder, as
uvicorn does), the listening URLs and how to stop are printed before the server starts, and
``--reload`` restarts the server when a ``.py`` file of the app's folder changes (uvicorn's
reloader: it needs the import string, which is why the app is never imported here first).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from ..core.loopback import is_loopback
from ..runtime.app_dir import add_app_dir
from ..runtime.ports import free_port
from ..server import serve
from ..server.web import WEB_ENV


def module_folder(app: str) -> Path:
    """The folder ``--reload`` watches: the app module's top-level package (or its own folder).

    Raises ``LookupError`` naming the fix when the module cannot be found on the import path.
    """
    module = app.split(":", 1)[0]
    top = module.split(".", 1)[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise LookupError(
            f"no module {top!r} in {Path.cwd()} or among the installed packages; run from the "
            f"folder that holds {top}.py (or {top}/), pass --app-dir FOLDER, or pip install it"
        )
    if spec.submodule_search_locations:  # a package: watch all of it
        return Path(next(iter(spec.submodule_search_locations))).resolve()
    return Path(spec.origin or ".").resolve().parent


def playground_on(args: argparse.Namespace) -> bool:
    """The playground at ``/web``: on for loopback unless ``--no-web``, off beyond it unless
    ``--web``; told to the app (built later, by uvicorn) through ``OPENENV_TRAIN_WEB``."""
    choice = getattr(args, "web", None)
    on = is_loopback(args.host) if choice is None else choice
    os.environ[WEB_ENV] = "1" if on else "0"
    return on


def banner(app: str, host: str, port: int, reload_dir: Path | None, web: bool = False) -> str:
    """What the user needs to reach the server and to stop it."""
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}"
    lines = [
        f"serving {app} at {url}",
        f"  health   {url}/health      API docs {url}/docs",
        f"  sessions ws://{shown}:{port}/ws (EnvClient)   MCP {url}/mcp",
    ]
    if web:
        lines.append(f"  playground {url}/web (a browser plays the env by hand)")
    if reload_dir is not None:
        lines.append(f"  reloading when a .py file under {reload_dir} changes")
    lines.append("Ctrl-C stops the server.")
    return "\n".join(lines)


def serve_local(app: str, env_dir: Path | None, args: argparse.Namespace) -> None:
    """Serve ``app`` (an import string) on ``args.host:args.port`` until Ctrl-C."""
    add_app_dir(env_dir if env_dir is not None else Path(args.app_dir))
    watch = module_folder(app)  # also checks that the module exists before uvicorn starts
    if not is_loopback(args.host):
        print(f"warning: serving on {args.host}, reachable from other machines", file=sys.stderr)
    web = playground_on(args)
    port = args.port or free_port(args.host)
    options: dict[str, object] = {}
    if args.reload:
        options = {"reload": True, "reload_dirs": [str(watch)]}
    print(banner(app, args.host, port, watch if args.reload else None, web), flush=True)
    serve(app, host=args.host, port=port, token_file=args.token_file, **options)
