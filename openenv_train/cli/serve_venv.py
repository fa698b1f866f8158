"""``openenv-train serve APP --venv``: serve an env from a venv of its own requirements.

The venv (``runtime.env_venv``: built once from the env package's requirements, cached by their
hash) replaces this process: ``python -m openenv_train serve`` runs again under the venv's
interpreter with the same options, so the banner, ``--reload`` and the token work as usual.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--venv",
        action="store_true",
        help="serve from a venv built from the env package's own requirements (cached by "
        "their hash): for an env whose dependencies conflict with this environment's",
    )
    p.add_argument(
        "--venv-requirement",
        action="append",
        default=None,
        metavar="REQ",
        help="with --venv: install these instead of the env package's requirements (repeatable)",
    )
    p.add_argument(
        "--venv-cache",
        default=None,
        metavar="DIR",
        help="with --venv: where venvs are cached (default $OPENENV_TRAIN_CACHE or ~/.cache/openenv-train)",
    )


def serve_argv(app: str, args: argparse.Namespace) -> list[str]:
    """The ``serve`` command line the venv's interpreter runs: the same options, no ``--venv``."""
    argv = ["serve", app, "--port", str(args.port), "--host", args.host]
    if args.reload:
        argv.append("--reload")
    if args.token_file:
        argv += ["--token-file", str(Path(args.token_file).resolve())]
    if args.web is not None:
        argv.append("--web" if args.web else "--no-web")
    return argv


def exec_in_venv(app: str, env_dir: Path | None, args: argparse.Namespace) -> None:
    """Build (or reuse) the env's venv, then replace this process with its ``serve``."""
    from ..core.errors import ServerStartError
    from ..runtime.app_dir import add_app_dir
    from ..runtime.env_venv import prepare_env_venv

    add_app_dir(env_dir if env_dir is not None else Path(args.app_dir))  # to find the package
    try:
        venv = prepare_env_venv(app, requirements=args.venv_requirement, cache_dir=args.venv_cache)
    except (ValueError, ServerStartError) as e:  # a bad requirement, a failed pip install
        raise LookupError(str(e)) from None
    print(f"serving from the env venv {venv.python.parent.parent}", flush=True)
    python = str(venv.python)
    os.execve(
        python,
        [python, "-m", "openenv_train", *serve_argv(app, args)],
        {**os.environ, **venv.environ()},
    )
