"""``LocalProcessProvider``: an env server in a local subprocess, the embedded default runtime.

The owner binds a free loopback port and hands the listening socket to the child (no port race),
the child is our launcher (``openenv_train.runtime.launch``), logs go to a temp file (a pipe could
fill up and stall the server) that is unlinked at once and read through the owner's open
descriptor, so no log file is ever left behind, even after a SIGKILL; readiness is ``GET /health``. Nothing outlives the owner: the
launcher dies with its parent (PDEATHSIG + parent-pid watchdog), and a ``weakref.finalize`` stops
the server at garbage collection or interpreter exit.
"""

from __future__ import annotations

import concurrent.futures
import os
import signal
import socket
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Mapping
from contextlib import suppress
from typing import Any

from ..core.errors import ServerStartError
from .health import Provider, wait_healthy
from .signals import raise_on_stop_signals
from .zygote import LAUNCH, ForkedProcess, zygote_for

# Children are forked from this one long-lived thread: PR_SET_PDEATHSIG fires when the *thread*
# that forked dies, so forking from a short-lived worker thread would kill the server early.
_SPAWNER = concurrent.futures.ThreadPoolExecutor(
    max_workers=1, thread_name_prefix="openenv-train-spawner"
)


def popen_on_spawner(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen`` on the spawner thread (see ``_SPAWNER``)."""
    return _SPAWNER.submit(subprocess.Popen, *args, **kwargs).result()


def _check_app(app: Any) -> str:
    if not isinstance(app, str) or ":" not in app or app.startswith(":") or app.endswith(":"):
        raise ValueError(
            f"app must be an ASGI import path 'package.module:attribute' "
            f"(e.g. 'echo_env.server.app:app'), got {app!r}"
        )
    return app


def _tail(fd: int, n: int, max_bytes: int = 256 * 1024) -> str:
    """The last ``n`` lines written to the (unlinked) log file open as ``fd``."""
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - max_bytes)
        data = os.pread(fd, size - start, start)
    except OSError:
        return ""
    lines = data.decode(errors="replace").splitlines()
    return "\n".join(lines[-n:]).rstrip()


def _terminate(proc: subprocess.Popen[bytes] | ForkedProcess, grace: float) -> None:
    """SIGTERM the server's process group, then SIGKILL whatever is left after ``grace`` s."""
    if proc.poll() is None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # also reaps grandchildren left in the group
    with suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _finalize(proc: subprocess.Popen[bytes] | ForkedProcess, log_fd: int, owner_pid: int) -> None:
    if os.getpid() != owner_pid:
        return  # a forked copy of the owner exiting must not stop the owner's server
    _terminate(proc, grace=1.0)
    with suppress(OSError):
        os.close(log_fd)


class LocalProcessProvider(Provider):
    """Serve ``app`` on ``host`` (loopback by default) in a subprocess.

    ``env`` adds to (not replaces) the parent's environment. ``python`` is the interpreter the
    server runs under (default: this one; an env venv's, ``runtime.env_venv``). ``start()``
    returns the base URL.
    """

    def __init__(
        self,
        app: str,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 30.0,
        log_lines: int = 50,
        stop_timeout: float = 5.0,
        python: str | None = None,
    ) -> None:
        self.app = _check_app(app)
        self.python = python or sys.executable
        if port is not None and not (isinstance(port, int) and 0 <= port <= 65535):
            raise ValueError(
                f"port must be an int in 0..65535 or None (any free port), got {port!r}"
            )
        if not (isinstance(startup_timeout, (int, float)) and startup_timeout > 0):
            raise ValueError(
                f"startup_timeout must be a positive number of seconds, got {startup_timeout!r}"
            )
        self.host = host
        self.port = port
        self.env = dict(env or {})
        self.startup_timeout = float(startup_timeout)
        self.log_lines = log_lines
        self.stop_timeout = stop_timeout
        self.base_url: str | None = None
        self._log_fd: int | None = None
        self._proc: subprocess.Popen[bytes] | ForkedProcess | None = None
        self._finalizer: weakref.finalize | None = None
        self._owner_pid = os.getpid()

    # ---- lifecycle -----------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``stop_timeout``). Idempotent.

        In a forked copy of the owner this only forgets the server: the owner still uses it.
        """
        proc, fin = self._proc, self._finalizer
        self._proc, self._finalizer, self.base_url = None, None, None
        if fin is not None:
            fin.detach()
        if self._owner_pid != os.getpid():
            return
        if proc is not None:
            _terminate(proc, self.stop_timeout)
        fd, self._log_fd = self._log_fd, None
        if fd is not None:
            with suppress(OSError):
                os.close(fd)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def logs(self, n: int | None = None) -> str:
        """The last ``n`` (default ``log_lines``) lines the server printed."""
        return _tail(self._log_fd, n or self.log_lines) if self._log_fd is not None else ""

    @property
    def log_path(self) -> str | None:
        """A path to read the live log through (``/proc/<owner>/fd/N``); the file has no name."""
        return f"/proc/{os.getpid()}/fd/{self._log_fd}" if self._log_fd is not None else None

    def __repr__(self) -> str:
        return f"LocalProcessProvider({self.app!r}, base_url={self.base_url!r}, pid={self.pid})"

    # ---- steps (start_local_servers spawns all first, then waits for all) -------------------

    def _spawn(self) -> None:
        if self._proc is not None:
            self.stop()
        try:
            family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port or 0))
        except OSError as e:
            raise ServerStartError(
                f"cannot bind {self.host}:{self.port or 0} for {self.app}: {e}; "
                "pass port=None to use any free port"
            ) from e
        port = sock.getsockname()[1]
        fd, path = tempfile.mkstemp(prefix="openenv-train-server-", suffix=".log")
        os.unlink(path)  # lives while a process holds it open: nothing to clean up, ever
        self._log_fd = fd
        args = ["--app", self.app, "--host", self.host, "--fd", str(sock.fileno()),
                "--parent-pid", str(os.getpid())]  # fmt: skip
        env = {**os.environ, **self.env, "PYTHONUNBUFFERED": "1"}
        try:
            with sock:
                self._proc = self._forked(args, env, sock.fileno(), fd) or popen_on_spawner(
                    [self.python, "-m", LAUNCH, *args],
                    stdin=subprocess.DEVNULL,
                    stdout=fd,
                    stderr=subprocess.STDOUT,
                    env=env,
                    pass_fds=(sock.fileno(),),
                    start_new_session=True,  # its own process group: stop() kills grandchildren too
                )
        except OSError as e:
            self.stop()
            raise ServerStartError(f"could not start a server process for {self.app}: {e}") from e
        self._owner_pid = os.getpid()
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.base_url = f"http://{host}:{port}"
        self._finalizer = weakref.finalize(self, _finalize, self._proc, fd, os.getpid())

    def _forked(self, args: list[str], env: dict[str, str], sock_fd: int, log_fd: int) -> Any:
        """The server forked from this process's zygote (``runtime.zygote``), or None where this
        interpreter has none (another ``python``, forking turned off, the zygote failed)."""
        zygote = zygote_for(popen_on_spawner) if self.python == sys.executable else None
        if zygote is None:
            return None
        try:
            return zygote.spawn(args, env, os.getcwd(), [sock_fd, log_fd])
        except OSError:
            return None  # a fresh interpreter instead

    def wait_healthy(self) -> None:
        """Poll ``GET /health`` until it answers 200; on failure stop and raise ``ServerStartError``."""
        assert self._proc is not None and self.base_url is not None
        proc = self._proc
        wait_healthy(
            self.base_url, self.startup_timeout, lambda: proc.poll() is not None, self._fail
        )

    def _fail(self, why: str) -> None:
        proc = self._proc
        logs = self.logs()
        self.stop()
        code = proc.returncode if proc is not None else None
        raise ServerStartError(
            f"env server {self.app} {why} (exit code {code}); last {self.log_lines} log "
            f"lines:\n{logs or '<empty>'}"
        )


def start_local_servers(app: str, n: int, **kwargs: Any) -> ServerGroup:
    """Start ``n`` servers of ``app`` in parallel; returns a ``ServerGroup`` (a list of providers).

    On any failure every server already started is stopped and the error is raised.
    """
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    group = ServerGroup(LocalProcessProvider(app, **kwargs) for _ in range(n))
    return start_group(group, parallel_spawn=False)


def start_group(group: ServerGroup, parallel_spawn: bool) -> ServerGroup:
    """Spawn every provider (in order, or in parallel when spawning is slow, e.g. an engine
    request), then wait for all in parallel; on any failure stop them all and raise."""
    raise_on_stop_signals()
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(len(group), 32)) as pool:
            if parallel_spawn:
                for fut in [pool.submit(p._spawn) for p in group]:
                    fut.result()
            else:
                for p in group:
                    p._spawn()  # fast; the slow part (imports, startup) runs in parallel
            for fut in [pool.submit(p.wait_healthy) for p in group]:
                fut.result()
    except BaseException:
        group.stop()
        raise
    return group


class ServerGroup(list[Any]):
    """Providers started together (local or container); ``with start_servers(app, 4) as servers:``
    stops them all."""

    @property
    def base_urls(self) -> list[str]:
        return [p.base_url for p in self if p.base_url is not None]

    def stop(self) -> None:
        """Stop every server (in parallel: each may wait ``stop_timeout``)."""
        if not self:
            return
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(len(self), 32)) as pool:
            list(pool.map(lambda p: p.stop(), self))

    def __enter__(self) -> ServerGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
