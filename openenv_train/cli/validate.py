"""``openenv-train validate PATH|URL|APP|IMAGE``: static, runtime and hardening checks of an env.

- PATH (an env package folder): models and app import, the Dockerfile rules, then the runtime
  checks against the package served as a local process.
- APP (``package.module:attribute``, imported from the current folder as ``serve`` does): the
  app imports, then the runtime checks against it served as a local process.
- URL (a running server): ``/health``, ``/schema``, a WebSocket reset and step, a bad frame
  answered with an error code while the session survives, capacity answered with
  ``CAPACITY_REACHED`` (probed when ``max_sessions`` is at most ``max_probe``).
- IMAGE: the runtime checks against a hardened container of it, then its hardening (non-root
  ``USER``, ``CapBnd`` zero, read-only root) and the venv in exactly one layer.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from ..runtime.health import probe
from .dockerfile_writer import check as check_dockerfile

#: ``package.module:attribute``; an image reference (``name:tag``) may look the same, so an app
#: is only taken for one when its top-level module imports
APP_PATTERN = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
KINDS_HINT = (
    "pass an env folder (openenv-train init NAME writes one), a server URL, an app "
    "'package.module:attribute' or a container image"
)


def target_kind(target: str, cwd: Path | None = None) -> str:
    """``"url"``, ``"path"``, ``"app"`` or ``"image"`` (what is left); ``ValueError`` naming the
    missing folder or module when ``target`` can only have meant a folder or an app."""
    here = Path.cwd() if cwd is None else cwd
    if target.startswith(("http://", "https://")):
        return "url"
    if (here / target).expanduser().exists():
        return "path"
    if target.startswith((".", "/", "~")) or target.endswith(("/", os.sep)):
        raise ValueError(f"no folder {target!r} (looked in {here}); {KINDS_HINT}")
    if APP_PATTERN.fullmatch(target):
        module = target.split(":", 1)[0]
        missing = missing_module(module, here)
        if missing is None:
            return "app"
        if missing != module.split(".", 1)[0]:  # the package is there, a submodule is not
            raise ValueError(
                f"app {target!r}: no module {missing!r} (looked in {here} and the installed "
                f"packages); check the spelling, e.g. {missing.rsplit('.', 1)[0]}.app:app"
            )
    return "image"


def missing_module(module: str, folder: Path) -> str | None:
    """The first of ``a``, ``a.b``, ``a.b.c`` that cannot be found from ``folder`` (None: all)."""
    from ..runtime.app_dir import on_import_path

    parts = module.split(".")
    with on_import_path(folder):
        for n in range(1, len(parts) + 1):
            name = ".".join(parts[:n])
            try:
                found = importlib.util.find_spec(name) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                return name
    return None


def not_an_image_hint(target: str, err: Exception, cwd: Path | None = None) -> str:
    """Why ``target`` could not be checked as an image, saying first what else it is not."""
    here = Path.cwd() if cwd is None else cwd
    top = target.split(":", 1)[0].split(".", 1)[0]
    app = f", nor an app (no module {top!r})" if APP_PATTERN.fullmatch(target) else ""
    return (
        f"{target!r} is not a folder in {here}, nor a URL{app}; as a container image it "
        f"cannot be checked: {err}. Otherwise {KINDS_HINT}"
    )


@dataclass
class Check:
    name: str
    ok: bool | None  # None: not run (the detail says why)
    detail: str = ""


def _ws_url(base_url: str) -> str:
    return base_url.replace("http://", "ws://", 1).replace("https://", "wss://", 1) + "/ws"


def example_action(schema: dict[str, Any]) -> dict[str, Any]:
    """A value for each required field of an action JSON schema (enum first, minimum, zero)."""
    defs = schema.get("$defs") or {}
    out: dict[str, Any] = {}
    for name in schema.get("required") or []:
        prop = schema.get("properties", {}).get(name, {})
        if "$ref" in prop:
            prop = defs.get(prop["$ref"].rsplit("/", 1)[1], {})
        if "enum" in prop:
            out[name] = prop["enum"][0]
        elif "const" in prop:
            out[name] = prop["const"]
        else:
            kind = prop.get("type")
            zero = {"integer": 0, "number": 0.0, "boolean": False, "array": [], "object": {}}
            value = zero.get(kind, "x") if isinstance(kind, str) else "x"
            if kind in ("integer", "number"):
                lo, hi = prop.get("minimum"), prop.get("maximum")
                value = lo if lo is not None and lo > 0 else hi if hi is not None and hi < 0 else 0
            out[name] = value
    return out


def _exchange(ws: Any, frame: Any) -> dict[str, Any]:
    ws.send(frame if isinstance(frame, str) else json.dumps(frame))
    return json.loads(ws.recv(timeout=10))


def runtime_checks(base_url: str, max_probe: int = 5000) -> list[Check]:
    from websockets.sync.client import connect

    checks: list[Check] = []
    status, health, why = probe(base_url, timeout=5)
    if status is None:
        return [Check("health", False, f"{base_url} does not answer: {why}")]
    checks.append(Check("health", status == 200, f"HTTP {status}"))
    try:
        schema = httpx.get(base_url + "/schema", timeout=5).json()
        has = {"action", "observation"} <= set(schema)
        checks.append(
            Check("schema", has, "action and observation schemas" if has else str(schema)[:200])
        )
    except (httpx.HTTPError, ValueError) as e:
        return checks + [Check("schema", False, f"{base_url}/schema does not answer: {e}")]
    try:
        with connect(_ws_url(base_url), open_timeout=10) as ws:
            reset = _exchange(ws, {"type": "reset", "data": {}})
            checks.append(Check("ws reset", reset.get("type") == "observation", str(reset)[:200]))
            action = example_action(schema.get("action") or {})
            step = _exchange(ws, {"type": "step", "data": action})
            ok = step.get("type") == "observation" or bool((step.get("data") or {}).get("code"))
            checks.append(Check("ws step", ok, f"action {action} -> {step.get('type')}"))
            bad = _exchange(ws, "{not json")
            code = (bad.get("data") or {}).get("code")
            checks.append(
                Check(
                    "bad frame -> error code", bad.get("type") == "error" and bool(code), str(code)
                )
            )
            again = _exchange(ws, {"type": "reset", "data": {}})
            checks.append(Check("session survives a bad frame", again.get("type") == "observation"))
    except Exception as e:
        checks.append(Check("ws session", False, f"{type(e).__name__}: {e}"))
    limit = int((health if isinstance(health, dict) else {}).get("max_sessions") or 0)
    if not limit or limit > max_probe:
        checks.append(
            Check("capacity", None, f"max_sessions={limit or '?'} above --max-probe {max_probe}")
        )
    else:
        checks.append(asyncio.run(_capacity(base_url, limit)))
    return checks


async def _capacity(base_url: str, limit: int) -> Check:
    """Hold ``limit`` sessions open, then one more must be refused with ``CAPACITY_REACHED``."""
    import websockets

    held: list[Any] = []
    sem = asyncio.Semaphore(100)

    async def one() -> None:
        async with sem:
            held.append(await websockets.connect(_ws_url(base_url), open_timeout=30))

    try:
        await asyncio.gather(*(one() for _ in range(limit)))
        async with websockets.connect(_ws_url(base_url), open_timeout=30) as extra:
            # the refusal comes at once; a loaded machine (CI: load 15 on 2 cores) once took >10 s
            answer = json.loads(await asyncio.wait_for(extra.recv(), 30))
        code = (answer.get("data") or {}).get("code")
        return Check(
            "capacity -> CAPACITY_REACHED", code == "CAPACITY_REACHED", f"{limit} held, then {code}"
        )
    except Exception as e:
        return Check("capacity -> CAPACITY_REACHED", False, f"{type(e).__name__}: {e}")
    finally:
        await asyncio.gather(*(ws.close() for ws in held), return_exceptions=True)


def static_checks(path: Path) -> tuple[list[Check], str | None]:
    from .env_build import env_package

    try:
        package = env_package(path)
    except ValueError as e:
        return [Check("package", False, str(e))], None
    checks = [Check("package", True, package)]
    from ..runtime.app_dir import on_import_path

    with on_import_path(path):
        for mod in (f"{package}.models", f"{package}.server.app"):
            try:
                module = importlib.import_module(mod)
                checks.append(Check(f"import {mod}", True))
            except Exception as e:
                checks.append(Check(f"import {mod}", False, f"{type(e).__name__}: {e}"))
                module = None
        app = getattr(module, "app", None) if module else None
        checks.append(Check("app factory", callable(app), f"{package}.server.app:app"))
    dockerfile = path / "Dockerfile"
    if dockerfile.is_file():
        problems = check_dockerfile(dockerfile.read_text())
        checks.append(Check("Dockerfile", not problems, "; ".join(problems) or "rules kept"))
    else:
        checks.append(Check("Dockerfile", False, "missing (openenv-train init writes one)"))
    return checks, package


def validate_path(path: Path, max_probe: int) -> list[Check]:
    from ..runtime import LocalProcessProvider

    checks, package = static_checks(path)
    if package is None or not all(c.ok for c in checks if c.name.startswith(("import", "app"))):
        return checks
    pythonpath = os.pathsep.join([str(path.resolve()), os.environ.get("PYTHONPATH", "")])
    with LocalProcessProvider(f"{package}.server.app:app", env={"PYTHONPATH": pythonpath}) as p:
        return checks + runtime_checks(p.base_url, max_probe)


def validate_app(app: str, max_probe: int, cwd: Path | None = None) -> list[Check]:
    """An import path: the app imports here (the current folder first, as ``serve``), then the
    runtime checks against it served as a local process."""
    from ..runtime import LocalProcessProvider
    from ..runtime.app_dir import on_import_path

    here = Path.cwd() if cwd is None else cwd
    module, attr = app.split(":", 1)
    with on_import_path(here):
        try:
            loaded = getattr(importlib.import_module(module), attr, None)
            checks = [Check(f"import {app}", loaded is not None, "" if loaded else "no " + attr)]
        except Exception as e:
            checks = [Check(f"import {app}", False, f"{type(e).__name__}: {e}")]
    if not checks[0].ok:
        return checks
    pythonpath = os.pathsep.join([str(here.resolve()), os.environ.get("PYTHONPATH", "")])
    with LocalProcessProvider(app, env={"PYTHONPATH": pythonpath}) as p:
        return checks + runtime_checks(p.base_url, max_probe)


def validate_image(image: str, engine: str, max_probe: int) -> list[Check]:
    from ..runtime import ContainerProvider
    from ..runtime import container_engine as ce
    from .env_build import image_facts

    client = ce.connect(engine)
    facts = image_facts(client, image)
    user = str((client.api.inspect_image(image).get("Config") or {}).get("User") or "")
    checks = [
        Check(
            "image USER non-root", user.split(":")[0] not in ("", "0", "root"), user or "<unset>"
        ),
        Check(
            "venv in exactly one layer",
            sum("/opt/venv" in h and "COPY" in h for h in facts.history) == 1,
            f"{facts.layers} layers, {facts.size / 1e6:.0f} MB",
        ),
    ]
    with ContainerProvider(image, engine=engine) as p:
        checks += runtime_checks(p.base_url, max_probe)
        h = p.hardening()
        checks += [
            Check("runs non-root", h.non_root, h.user),
            Check("CapBnd zero", h.cap_bnd == 0, f"{h.cap_bnd:#018x}"),
            Check("read-only root", h.read_only),
        ]
    return checks


def report(target: str, checks: list[Check], as_json: bool) -> str:
    if as_json:
        passed = all(c.ok is not False for c in checks)
        return json.dumps(
            {"target": target, "passed": passed, "checks": [asdict(c) for c in checks]}, indent=1
        )
    mark = {True: "[green]PASS[/]", False: "[red]FAIL[/]", None: "[yellow]SKIP[/]"}
    lines = [f"validate {target}"] + [f"  {mark[c.ok]} {c.name}  {c.detail}" for c in checks]
    return "\n".join(lines)
