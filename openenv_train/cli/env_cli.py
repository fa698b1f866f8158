"""The env author's commands: ``init``, ``serve``, ``build``, ``validate`` (``register(sub)``).

Every failure is a ``CLIError`` (clear message, exit status 2); slow steps show rich progress.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from . import serve_ray, serve_venv
from .main import CLIError

console = Console(stderr=True)
RUNTIMES = ("local", "docker", "podman", "ray")  # ray: a fleet on a Ray cluster (serve_ray)


def cmd_init(args: argparse.Namespace) -> int:
    from .scaffold import scaffold

    dest = Path(args.dir) / args.name if args.dir else Path(args.name)
    try:
        files = scaffold(args.name, dest)
    except (ValueError, FileExistsError) as e:
        raise CLIError(str(e)) from None
    for f in files:
        console.print(f"  created {f}")
    console.print(
        f"[green]{args.name}[/] ready. Next: cd {dest} && {_test_command()}; "
        "then, from there: openenv-train serve .; openenv-train validate .; "
        "openenv-train build ."
    )
    return 0


def _test_command() -> str:
    """How to run the scaffold's tests in this environment (pytest is not a dependency)."""
    import importlib.util

    if importlib.util.find_spec("pytest") is None:
        return "pip install pytest && python -m pytest tests"
    return "python -m pytest tests"


def _package_dir(target: str) -> tuple[Path | None, str]:
    """(env folder or None, app import path) for a PATH, APP or catalog NAME argument."""
    path = Path(target)
    if path.is_dir():
        from .env_build import env_package

        try:
            return path, f"{env_package(path)}.server.app:app"
        except ValueError as e:
            raise CLIError(str(e)) from None
    if ":" not in target:
        return None, _catalog_app(target)
    if target.startswith(":") or target.endswith(":"):
        raise CLIError(
            f"{target!r} is neither an env folder, an env name (openenv-train envs) nor an "
            "import path 'package.module:attribute' (e.g. echo_env.server.app:app)"
        )
    return None, target


def _catalog_app(name: str) -> str:
    """The app import path of the installed env ``name`` (``blackjack``, ``reasoning_gym/ab``)."""
    from ..catalog import BrokenEnvEntryError, UnknownEnvError, get_entry

    try:
        return get_entry(name).app
    except UnknownEnvError as e:
        raise CLIError(
            f"{name!r} is neither an env folder nor an import path 'package.module:attribute' "
            f"(e.g. echo_env.server.app:app), and {e}"
        ) from None
    except BrokenEnvEntryError as e:
        raise CLIError(str(e)) from None


def _build(env_dir: Path, tag: str, base_image: str | None, engine: str):
    from ..runtime.container_engine import EngineError
    from .env_build import BASE_IMAGE_HINT, BuildError, build_image, local_base_image

    step = {"n": "starting"}
    try:
        with console.status(f"building {tag} on {engine}...") as status:

            def on_line(line: str) -> None:
                if line.startswith("Step ") or line.startswith("STEP "):
                    step["n"] = line.split(":", 1)[0]
                    status.update(f"building {tag} on {engine}: {line[:90]}")

            return build_image(env_dir, tag, base_image=base_image, engine=engine, on_line=on_line)
    except BuildError as e:
        base = local_base_image(engine) if base_image is None else None
        if base is not None:
            console.print(
                f"the default base image could not be used ({str(e).splitlines()[0]}); "
                f"building on the local base image {base} (`make engines` built it)"
            )
            return _build(env_dir, tag, base, engine)
        raise CLIError(f"{e}\n{BASE_IMAGE_HINT}") from None
    except (EngineError, ValueError) as e:
        raise CLIError(str(e)) from None


def cmd_build(args: argparse.Namespace) -> int:
    from .env_build import default_tag

    env_dir = Path(args.path)
    if not env_dir.is_dir():
        raise CLIError(
            f"PATH {args.path!r} is not a folder; pass an env folder (openenv-train init)"
        )
    try:
        tag = args.tag or default_tag(env_dir)
    except ValueError as e:
        raise CLIError(str(e)) from None
    t0 = time.perf_counter()
    facts = _build(env_dir, tag, args.base_image, args.engine)
    print(
        f"built {facts.tag} in {time.perf_counter() - t0:.0f}s: "
        f"{facts.size / 1e6:.1f} MB, {facts.layers} layers"
    )
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    env_dir, app = _package_dir(args.target)
    if args.reload and args.runtime != "local":
        raise CLIError(f"--reload restarts a local server; drop it with --runtime {args.runtime}")
    if args.runtime == "ray":
        from .serve_ray import cmd_serve_ray

        args.app = app
        return cmd_serve_ray(args, CLIError)
    if args.venv and args.runtime != "local":
        raise CLIError(f"--venv serves a local process; drop it with --runtime {args.runtime}")
    if args.runtime == "local":
        from .serve_local import serve_local
        from .serve_venv import exec_in_venv

        try:
            (exec_in_venv if args.venv else serve_local)(app, env_dir, args)
        except LookupError as e:
            raise CLIError(str(e)) from None
        return 0
    from ..core.errors import InfrastructureError
    from ..runtime import ContainerProvider

    image = args.image
    if image is None:
        if env_dir is None:
            raise CLIError(f"--runtime {args.runtime} with an app path needs --image IMAGE")
        from .env_build import default_tag

        image = default_tag(env_dir)
        _build(env_dir, image, args.base_image, args.runtime)
    provider = ContainerProvider(image, engine=args.runtime, host_port=args.port)
    try:
        with console.status(f"starting {image} on {args.runtime}..."):
            provider.start()
        print(f"serving {image} at {provider.base_url} ({args.runtime}, hardened); Ctrl-C stops")
        while provider.running:
            time.sleep(1)
        raise CLIError(f"the container exited:\n{provider.logs()}")
    except InfrastructureError as e:
        raise CLIError(str(e)) from None
    finally:
        provider.stop()


def cmd_validate(args: argparse.Namespace) -> int:
    from ..runtime.container_engine import EngineError
    from . import validate as v

    target = args.target
    try:
        kind = v.target_kind(target)
    except ValueError as e:
        raise CLIError(str(e)) from None
    with console.status(f"validating {target}..."):
        try:
            if kind == "url":
                checks = v.runtime_checks(target.rstrip("/"), args.max_probe)
            elif kind == "path":
                checks = v.validate_path(Path(target).expanduser(), args.max_probe)
            elif kind == "app":
                checks = v.validate_app(target, args.max_probe)
            else:
                checks = v.validate_image(target, args.engine, args.max_probe)
        except EngineError as e:
            raise CLIError(v.not_an_image_hint(target, e)) from None
        except Exception as e:  # an image that does not exist, a server that will not start
            raise CLIError(f"cannot validate {target}: {type(e).__name__}: {e}") from None
    text = v.report(target, checks, args.json)
    if args.json:
        print(text)
    else:
        Console().print(text)
    return 1 if any(c.ok is False for c in checks) else 0


def _add_serve(sub: Any) -> None:
    """``serve``: its target and the options of each runtime."""
    p = sub.add_parser(
        "serve",
        help="serve an env folder, installed env name or app (my_env:app, like uvicorn)",
    )
    p.add_argument(
        "target",
        metavar="PATH_OR_APP",
        help="env folder, installed env name (openenv-train envs: blackjack, reasoning_gym/ab) "
        "or an import path module:attribute (my_env:app, pkg.server.app:app)",
    )
    p.add_argument(
        "--runtime",
        choices=RUNTIMES,
        default="local",
        help="local process (default), a hardened docker/podman container, or a fleet on ray",
    )
    p.add_argument(
        "--port", type=int, default=8000, help="port (default 8000; 0 picks a free one, local)"
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="bind address, local runtime (default loopback)"
    )
    p.add_argument(
        "--app-dir",
        default=".",
        help="folder put first on the import path for module:attribute (default: the current one)",
    )
    p.add_argument(
        "--reload",
        action="store_true",
        help="restart the server when a .py file of the app's package changes (local runtime)",
    )
    p.add_argument(
        "--token-file",
        default=None,
        help="require the bearer token in this file (beyond loopback one is generated if unset)",
    )
    p.add_argument(
        "--web",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the playground page at /web (default: on for loopback, off beyond it; local runtime)",
    )
    p.add_argument("--image", default=None, help="container image (default: build PATH first)")
    p.add_argument("--base-image", default=None, help="BASE_IMAGE when serve builds the image")
    serve_ray.add_arguments(p)  # --replicas, --ray-address, ... (--runtime ray)
    serve_venv.add_arguments(p)  # --venv, --venv-requirement, --venv-cache (local runtime)
    p.set_defaults(func=cmd_serve)


def register(sub: Any) -> None:  # argparse's subparsers object
    """Add ``init``, ``serve``, ``build`` and ``validate`` to the ``openenv-train`` parser."""
    p = sub.add_parser(
        "init", help="scaffold an env package (models, server, client, Dockerfile, tests)"
    )
    p.add_argument("name", help="Python package name, e.g. my_env")
    p.add_argument("--dir", default=None, help="parent folder (default: the current folder)")
    p.set_defaults(func=cmd_init)

    _add_serve(sub)

    p = sub.add_parser("build", help="build an env's image; prints its size and layer count")
    p.add_argument("path", metavar="PATH", help="env folder with a Dockerfile")
    p.add_argument(
        "--tag", default=None, help="image name (default openenv-train/<package>:latest)"
    )
    p.add_argument(
        "--base-image", default=None, help="BASE_IMAGE build argument (default python:3.11-slim)"
    )
    p.add_argument("--engine", default="docker", help="docker, podman or an engine API URL")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("validate", help="static, runtime and hardening checks of an env")
    p.add_argument(
        "target",
        metavar="PATH|URL|APP|IMAGE",
        help="env folder, running server URL, app 'package.module:attribute' or image name",
    )
    p.add_argument("--json", action="store_true", help="machine-readable report (for CI)")
    p.add_argument("--engine", default="docker", help="engine for an IMAGE (docker, podman, URL)")
    p.add_argument(
        "--max-probe", type=int, default=5000, help="probe capacity up to this many sessions"
    )
    p.set_defaults(func=cmd_validate)
