"""``openenv-train serve APP`` on this machine, the way ``uvicorn APP`` behaves.

``my_env:app`` is imported from the app folder (``--app-dir``, default the current folder, as
uvicorn does) before anything is printed, so a typo is one line of ours, not a banner followed by
uvicorn's error; then the listening URLs and how to stop are printed and the server starts.
``--reload`` restarts the server when a ``.py`` file of the app's folder changes (uvicorn's
reloader imports the string in its own process, so here the module is only looked up).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from typing import Any

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


def load_app(app: str) -> Any:
    """The app object ``module:attribute`` names, or ``LookupError`` in one line: the module
    that is missing, the attribute that is not there, or the error the module raised (with
    its file and line)."""
    module, _, attr = app.partition(":")
    if not attr:
        raise LookupError(f"app {app!r}: expected 'package.module:attribute' (e.g. my_env:app)")
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and module.startswith(e.name):  # the app's own module, not one it imports
            raise LookupError(
                f"app {app!r}: no module {e.name!r} (looked in {Path.cwd()} and the installed "
                "packages); check the spelling, or pass --app-dir FOLDER"
            ) from None
        raise LookupError(f"app {app!r}: {_where(e)}") from None
    except Exception as e:  # the user's module failed while importing
        raise LookupError(f"app {app!r}: {_where(e)}") from None
    try:
        return getattr(loaded, attr)
    except AttributeError:
        raise LookupError(
            f"app {app!r}: module {module!r} ({loaded.__file__}) has no attribute {attr!r}"
        ) from None


def _where(err: BaseException) -> str:
    """``Type: message (file:line)`` of the innermost frame that raised ``err``."""
    frames = traceback.extract_tb(err.__traceback__)
    at = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"importing it raised {type(err).__name__}: {err}{at}"


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
    web = playground_on(args)  # before the import: the app reads it when it is built
    port = args.port or free_port(args.host)
    options: dict[str, object] = {}
    target: Any = app
    if args.reload:
        options = {"reload": True, "reload_dirs": [str(watch)]}
        missing = _missing_module(app.split(":", 1)[0])
        if missing:
            raise LookupError(
                f"app {app!r}: no module {missing!r} (looked in {Path.cwd()} and the installed "
                "packages); check the spelling, or pass --app-dir FOLDER"
            )
    else:
        target = load_app(app)
    print(banner(app, args.host, port, watch if args.reload else None, web), flush=True)
    serve(target, host=args.host, port=port, token_file=args.token_file, **options)


def _missing_module(module: str) -> str | None:
    """The first of ``a``, ``a.b``, ... that cannot be found (None: the module is there)."""
    parts = module.split(".")
    for n in range(2, len(parts) + 1):  # the top-level one: module_folder checked it
        name = ".".join(parts[:n])
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):
            return name
    return None
