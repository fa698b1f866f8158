"""``DaytonaProvider``: an env server in a Daytona cloud sandbox (OpenEnv's provider of that name).

One object, two shapes. Ours, like every provider here: ``DaytonaProvider(image, ...)``,
``start() -> base_url``, ``stop()``, ``with``, ``EnvClient(provider=...)``. OpenEnv's:
``start_container(image)``, ``wait_for_ready(url)``, ``stop_container()``, so
``EnvClient.from_docker_image(image, provider=DaytonaProvider())`` works unchanged.

The ``daytona`` SDK is an optional dependency (``pip install daytona``), imported when a provider
is made. Secure by default: the API key comes from ``api_key=`` or ``DAYTONA_API_KEY`` and is never
printed; the sandbox is private and reached through a *signed* preview URL (the access token is in
the URL, so the URL itself is never logged or put in an error); a ``public=True`` sandbox gets a
bearer token of its own that our server requires and our clients send. Every wait is bounded
(``create_timeout``, ``startup_timeout``) and a server that dies is reported with its log at once.

Daytona runs an image's ENTRYPOINT but not its CMD, so the server is started by a command run in
the sandbox, chosen in this order: ``cmd=`` (a shell command), ``app=`` (an import path, for an
image with openenv-train: our launcher), the ``app`` of an ``openenv.yaml`` found under ``/app``
(an OpenEnv image: uvicorn), the last ``CMD`` of a Dockerfile given by ``image_from_dockerfile``.
"""

from __future__ import annotations

import os
import posixpath
import secrets
import shlex
import tempfile
import time
import weakref
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import yaml

from ..core.auth import TOKEN_ENV, check_token, forget_server_token, register_server_token
from .dockerfile_reader import DockerfileImage, read_dockerfile, strip_buildkit_mounts
from .errors import SandboxError as SandboxError
from .errors import SandboxTimeoutError as SandboxTimeoutError
from .health import Provider, wait_healthy
from .launch import serve_argv

SERVER_PORT = 8000  # the sandbox port the server listens on and the preview URL opens
SERVER_LOG = "/tmp/openenv-server.log"
SERVER_PID = "/tmp/openenv-server.pid"
MANIFEST = "/app/env/openenv.yaml"  # where OpenEnv's images keep the env's manifest
PREVIEW_TTL_S = 86400  # Daytona's longest-lived signed preview URL: 24 h
EXEC_TIMEOUT_S = 10
LOG_LINES = 50
API_KEY_ENV = "DAYTONA_API_KEY"


def load_sdk() -> ModuleType:
    """The ``daytona`` SDK, or an ImportError that says how to install it."""
    try:
        import daytona
    except ImportError as e:
        raise ImportError(
            "DaytonaProvider needs the Daytona SDK: pip install daytona "
            "(or pip install 'openenv-train[daytona]')"
        ) from e
    return daytona


def app_from_manifest(text: str) -> str | None:
    """The top-level ``app`` (an ASGI import path) of an ``openenv.yaml``, or None."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    app = data.get("app") if isinstance(data, dict) else None
    return app.strip() or None if isinstance(app, str) else None


def _output(response: Any) -> str:
    """The text of a ``process.exec`` answer (the SDK's ExecuteResponse, or a plain string)."""
    text = response.result if hasattr(response, "result") else response
    return "" if text is None else str(text)


def _delete_quietly(client: Any, sandbox: Any, owner_pid: int) -> None:
    if os.getpid() == owner_pid:
        with suppress(Exception):
            client.delete(sandbox)


class DaytonaProvider(Provider):
    """Serve an env image in a Daytona sandbox; ``base_url`` is its signed preview URL.

    ``image``: a registry image (``"org/echo-env:latest"``), ``"snapshot:<name>"`` or what
    :meth:`image_from_dockerfile` returns; needed by ``start()``, optional for OpenEnv's
    ``start_container(image)``. ``env`` is passed to the sandbox; ``resources`` is a
    ``daytona.Resources``; ``auto_stop_interval`` (minutes idle, 0 = never) bounds a sandbox
    this process could not delete.
    """

    #: Dockerfiles registered by ``image_from_dockerfile``, by absolute path.
    _dockerfile_registry: ClassVar[dict[str, DockerfileImage]] = {}

    def __init__(
        self,
        image: str | None = None,
        *,
        app: str | None = None,
        cmd: str | None = None,
        api_key: str | None = None,
        target: str | None = None,
        public: bool = False,
        resources: Any = None,
        auto_stop_interval: int = 15,
        on_snapshot_create_logs: Callable[[str], None] | None = None,
        create_timeout: float = 300,
        startup_timeout: float = 120,
        env: Mapping[str, str] | None = None,
        token: str | None = None,
        preview_ttl: int = PREVIEW_TTL_S,
    ) -> None:
        for name, value in (
            ("create_timeout", create_timeout),
            ("startup_timeout", startup_timeout),
        ):
            if not (isinstance(value, (int, float)) and value > 0):
                raise ValueError(f"{name} must be > 0 seconds, got {value!r}")
        if not (isinstance(auto_stop_interval, int) and auto_stop_interval >= 0):
            raise ValueError(f"auto_stop_interval must be minutes >= 0, got {auto_stop_interval!r}")
        if not (isinstance(preview_ttl, int) and 0 < preview_ttl <= PREVIEW_TTL_S):
            raise ValueError(f"preview_ttl must be 1..{PREVIEW_TTL_S} seconds, got {preview_ttl!r}")
        self._sdk = load_sdk()
        key = api_key or os.environ.get(API_KEY_ENV)
        if not key and not os.environ.get("DAYTONA_JWT_TOKEN"):
            raise ValueError(
                f"no Daytona API key: pass api_key=... or set {API_KEY_ENV} "
                "(create a key in the Daytona dashboard under API Keys)"
            )
        config: dict[str, Any] = {"api_key": key} if key else {}
        if target:
            config["target"] = target
        self._daytona = self._sdk.Daytona(self._sdk.DaytonaConfig(**config))
        self.image, self.app, self.cmd, self.env = image, app, cmd, dict(env or {})
        self.public, self.resources = public, resources
        self.auto_stop_interval = auto_stop_interval
        self.on_snapshot_create_logs = on_snapshot_create_logs
        self.create_timeout, self.startup_timeout = float(create_timeout), float(startup_timeout)
        self.preview_ttl = preview_ttl
        if token is None and public:
            token = secrets.token_urlsafe(32)  # a public preview URL is open to anyone: guard it
        #: the bearer token the server requires (None: the signed URL alone guards it)
        self.token = check_token(token, "token") if token is not None else None
        self._sandbox: Any = None
        self._preview_url: str | None = None
        #: when the signed preview URL stops working (epoch seconds): ``refresh_preview_url()``
        self.preview_expires_at: float | None = None
        self._finalizer: weakref.finalize | None = None

    # ---- our provider shape ------------------------------------------------------------------

    @property
    def base_url(self) -> str | None:  # type: ignore[override]
        """The signed preview URL (a secret: it carries the access token)."""
        return self._preview_url

    @property
    def sandbox_id(self) -> str | None:
        return None if self._sandbox is None else str(getattr(self._sandbox, "id", "") or "?")

    @property
    def running(self) -> bool:
        return self._sandbox is not None and self._server_state() == "RUNNING"

    def _spawn(self) -> None:
        if not self.image:
            raise ValueError(
                "DaytonaProvider(image=...) is needed by start(): a registry image, "
                "'snapshot:<name>' or DaytonaProvider.image_from_dockerfile(path)"
            )
        self.start_container(self.image, env_vars=self.env or None)

    def wait_healthy(self) -> None:
        assert self._preview_url is not None
        self.wait_for_ready(self._preview_url, self.startup_timeout)

    def stop(self) -> None:
        """Delete the sandbox. Idempotent."""
        self.stop_container()

    def logs(self, n: int = LOG_LINES) -> str:
        """The last ``n`` lines the server printed in the sandbox."""
        if self._sandbox is None:
            return ""
        try:
            return _output(self._exec(f"cat {SERVER_LOG} 2>/dev/null | tail -n {int(n)}")).rstrip()
        except Exception as e:
            return f"<logs unavailable: {type(e).__name__}>"

    def __repr__(self) -> str:  # never the key or the signed URL
        return f"DaytonaProvider(image={self.image!r}, sandbox={self.sandbox_id!r})"

    # ---- OpenEnv's provider shape --------------------------------------------------------------

    def start_container(
        self,
        image: str,
        port: int | None = None,
        env_vars: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> str:
        """Create a sandbox of ``image``, start its server, return the signed preview URL.

        ``port`` must be None or 8000 (the preview URL opens port 8000 in the sandbox);
        ``cmd=`` chooses the server command; other ``kwargs`` go to ``Daytona.create``.
        Returns before the server answers: ``wait_for_ready(url)`` waits for it.
        """
        if not isinstance(image, str) or not image:
            raise ValueError("image: give an image name, 'snapshot:<name>' or 'dockerfile:<path>'")
        if port is not None and port != SERVER_PORT:
            raise ValueError(
                f"DaytonaProvider only supports port {SERVER_PORT} (got {port}): the preview URL "
                f"opens port {SERVER_PORT} in the sandbox, where the server listens"
            )
        cmd = kwargs.pop("cmd", None) or self.cmd
        self.image = image
        if self._sandbox is not None:
            self.stop_container()  # one sandbox per provider: never leak the previous one
        params, dockerfile_cmd = self._create_params(image, env_vars)
        if self.on_snapshot_create_logs is not None and not image.startswith("snapshot:"):
            kwargs["on_snapshot_create_logs"] = self.on_snapshot_create_logs
        try:
            sandbox = self._daytona.create(params, timeout=self.create_timeout, **kwargs)
        except Exception as e:
            raise SandboxError(f"Daytona could not create a sandbox of {image!r}: {e}") from e
        self._sandbox = sandbox
        self._finalizer = weakref.finalize(
            self, _delete_quietly, self._daytona, sandbox, os.getpid()
        )
        try:
            if cmd is None and self.app is not None:
                cmd = shlex.join(serve_argv(self.app, SERVER_PORT))
            if cmd is None:
                try:
                    cmd = self._discover_command()
                except ValueError:
                    if not dockerfile_cmd:
                        raise
                    cmd = dockerfile_cmd
            self._exec(
                f"nohup bash -c {shlex.quote(cmd)} > {SERVER_LOG} 2>&1 & echo $! > {SERVER_PID}"
            )
            self._set_url(self._sign())
        except BaseException:
            self.stop_container()
            raise
        return self._preview_url  # type: ignore[return-value]

    def wait_for_ready(self, base_url: str, timeout_s: float | None = None) -> None:
        """Poll ``GET /health`` until it answers 200. A dead server raises ``SandboxError`` (a
        RuntimeError) with its log at once; no answer in ``timeout_s`` (default
        ``startup_timeout``) raises ``SandboxTimeoutError`` (a TimeoutError). Either way the
        sandbox is deleted."""
        timeout = self.startup_timeout if timeout_s is None else float(timeout_s)

        def timed_out(why: str) -> None:
            raise self._failure(SandboxTimeoutError, f"did not become ready: {why}", base_url)

        wait_healthy(base_url, timeout, self._died, timed_out, check_every=2.0, probe_timeout=5.0)

    def stop_container(self) -> None:
        """Delete the sandbox (a no-op when there is none)."""
        sandbox, self._sandbox = self._sandbox, None
        if self._preview_url is not None:
            forget_server_token(self._preview_url)
        self._preview_url = self.preview_expires_at = None
        fin, self._finalizer = self._finalizer, None
        if fin is not None:
            fin.detach()
        if sandbox is None:
            return
        try:
            self._daytona.delete(sandbox)
        except Exception as e:
            sid = getattr(sandbox, "id", "?")
            raise SandboxError(
                f"could not delete Daytona sandbox {sid}: {e}; delete it in the Daytona "
                "dashboard (it stops itself after auto_stop_interval minutes idle)"
            ) from e

    def refresh_preview_url(self) -> str:
        """A fresh signed preview URL for the running sandbox (they expire after
        ``preview_ttl``); clients must reconnect with it."""
        if self._sandbox is None:
            raise RuntimeError("No active sandbox: start one first (start() or start_container())")
        if self._preview_url is not None:
            forget_server_token(self._preview_url)
        self._set_url(self._sign())
        return self._preview_url  # type: ignore[return-value]

    strip_buildkit_syntax = staticmethod(strip_buildkit_mounts)

    @classmethod
    def image_from_dockerfile(cls, dockerfile_path: str, context_dir: str | None = None) -> str:
        """Check a Dockerfile (its ``COPY`` sources, inside ``context_dir``) and register it;
        returns ``"dockerfile:<absolute path>"`` for ``start_container`` / ``image=``.

        ``context_dir`` defaults to the Dockerfile's folder, or its parent for OpenEnv's
        ``<env>/server/Dockerfile`` layout. BuildKit ``--mount`` flags are dropped (Daytona's
        builder does not take them); the last ``CMD`` is the server command of last resort.
        """
        plan = read_dockerfile(dockerfile_path, context_dir)
        cls._dockerfile_registry[str(plan.path)] = plan
        return f"dockerfile:{plan.path}"

    # ---- steps ---------------------------------------------------------------------------------

    def _create_params(self, image: str, env_vars: dict[str, str] | None) -> tuple[Any, str | None]:
        """The SDK's create parameters for ``image``, and a Dockerfile's CMD (or None)."""
        common: dict[str, Any] = {}
        env = {**(env_vars or {}), **({TOKEN_ENV: self.token} if self.token else {})}
        if env:
            common["env_vars"] = env
        if self.public:
            common["public"] = True
        if self.auto_stop_interval != 15:  # 15 minutes is Daytona's own default
            common["auto_stop_interval"] = self.auto_stop_interval
        if image.startswith("snapshot:"):
            return self._sdk.CreateSandboxFromSnapshotParams(
                snapshot=image.removeprefix("snapshot:"), **common
            ), None
        dockerfile_cmd: str | None = None
        source: Any = image
        if image.startswith("dockerfile:"):
            path = image.removeprefix("dockerfile:")
            plan = self._dockerfile_registry.get(path)
            if plan is None:
                raise ValueError(
                    f"No registered Dockerfile metadata for {path}: pass the string "
                    "DaytonaProvider.image_from_dockerfile(path) returns"
                )
            source, dockerfile_cmd = self._image_of(plan), plan.server_cmd
        if self.resources is not None:
            common["resources"] = self.resources
        return self._sdk.CreateSandboxFromImageParams(image=source, **common), dockerfile_cmd

    def _image_of(self, plan: DockerfileImage) -> Any:
        """A ``daytona.Image`` of the stripped Dockerfile; its text is written next to the
        context for the SDK to read (the SDK builds from a Dockerfile's own folder), then removed."""
        fd, tmp = tempfile.mkstemp(prefix=".daytona-", suffix=".dockerfile", dir=plan.context_dir)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(plan.content)
            return self._sdk.Image.from_dockerfile(tmp)
        finally:
            Path(tmp).unlink(missing_ok=True)

    def _exec(self, command: str) -> Any:
        return self._sandbox.process.exec(command, timeout=EXEC_TIMEOUT_S)

    def _discover_command(self) -> str:
        """``cd <env root> && python -m uvicorn <app> ...`` from the sandbox's ``openenv.yaml``."""
        path: str | None = MANIFEST
        if "found" not in _output(self._exec(f"test -f {MANIFEST} && echo found")):
            found = _output(
                self._exec("find /app -maxdepth 4 -name openenv.yaml -print -quit 2>/dev/null")
            ).strip()
            path = found if found.startswith("/") else None
        if path is None:
            raise ValueError(
                "Could not find openenv.yaml inside the sandbox (looked at "
                f"{MANIFEST} and under /app): pass cmd= (a shell command serving port "
                f"{SERVER_PORT}) or app= (an import path, for an image with openenv-train)"
            )
        app = app_from_manifest(_output(self._exec(f"cat {shlex.quote(path)}")))
        if app is None:
            raise ValueError(
                f"openenv.yaml at {path} does not contain an 'app' field (an ASGI import path "
                "like server.app:app): add it, or pass cmd= / app="
            )
        root = shlex.quote(posixpath.dirname(path))
        return (
            f"cd {root} && python -m uvicorn {shlex.quote(app)} --host 0.0.0.0 --port {SERVER_PORT}"
        )

    def _sign(self) -> str:
        signed = self._sandbox.create_signed_preview_url(
            SERVER_PORT, expires_in_seconds=self.preview_ttl
        )
        return str(signed.url).rstrip("/")

    def _set_url(self, url: str) -> None:
        self._preview_url = url
        self.preview_expires_at = time.time() + self.preview_ttl
        if self.token is not None:
            register_server_token(url, self.token)

    def _server_state(self) -> str:
        """``RUNNING``, ``DEAD``, or ``UNKNOWN`` when the sandbox could not be asked."""
        try:
            out = _output(
                self._exec(
                    f'kill -0 "$(cat {SERVER_PID})" 2>/dev/null && echo RUNNING || echo DEAD'
                )
            )
        except Exception:
            return "UNKNOWN"
        return "DEAD" if "DEAD" in out else "RUNNING" if "RUNNING" in out else "UNKNOWN"

    def _died(self) -> bool:
        """Raises the failure (with the log) when the server process has exited; else False."""
        if self._sandbox is not None and self._server_state() == "DEAD":
            raise self._failure(SandboxError, "Server process died before it became healthy")
        return False

    def _failure(self, kind: type[SandboxError], why: str, url: str | None = None) -> SandboxError:
        """``kind`` naming the sandbox, with the log; deletes the sandbox. The signed URL (a
        secret) is cut out of ``why``."""
        url = url or self._preview_url
        if url:
            host = url.split("://", 1)[-1].split("/", 1)[0]
            why = why.replace(url, "<preview url>").replace(host, "<preview host>")
        sid, log = self.sandbox_id, self.logs()
        with suppress(Exception):
            self.stop_container()
        return kind(
            f"{why} (Daytona sandbox {sid}, image {self.image!r}); last {LOG_LINES} log lines "
            f"of the server:\n{log or '<empty>'}"
        )
