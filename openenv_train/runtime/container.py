"""``ContainerProvider``: an env server in a hardened Docker or Podman container.

Same shape as ``LocalProcessProvider`` (``start() -> base_url``, ``stop()``, ``base_url``,
context manager), so every caller can take either. Hardened by default, each default relaxable
by name (``relax={"read_only"}``): non-root user, all capabilities dropped, no-new-privileges,
read-only root with a tmpfs at ``/tmp``, memory / pids / CPU limits; the port is published on
127.0.0.1 only. Every container carries labels (project, owner pid + start time, host, run id):
the first provider started in a process removes containers whose owner died, even by SIGKILL.
Stopping kills without a grace period, removes, and verifies the removal by an exact name listing.

Tokens: ``token=`` (or ``OPENENV_TRAIN_TOKEN`` in ``env``) makes the server require it. Where one
owner starts several containers (``start_container_servers`` with n > 1, an ``EnvPool`` that can
hold more than one) each gets a fresh token of its own by default (``use_own_token``), so a
container cannot open sessions on another's server over a shared network; this process's
clients find it by URL (``core.auth.client_token``).
"""

from __future__ import annotations

import os
import secrets
import threading
import uuid
import weakref
from collections.abc import Iterable, Mapping
from contextlib import suppress
from typing import Any, NoReturn

from ..core.auth import TOKEN_ENV, check_token, forget_server_token, register_server_token
from ..core.errors import ServerStartError
from ..server.session_cap import CAP_ENV
from . import capacity
from . import container_engine as ce
from .health import Provider, wait_healthy
from .launch import serve_argv
from .netns_port import NetnsPort

#: The defaults ``relax`` can turn off, by name.
RELAXABLE = ("user", "cap_drop", "no_new_privileges", "read_only", "limits")
CONTAINER_PORT = 8000
NAME_PREFIX = "openenv-train"
PORT_RACE_TRIES = 3  # starts tried when the engine's chosen host port is taken under it

_REAPED: set[str] = set()  # engines already swept for orphans by this process
_REAP_LOCK = threading.Lock()


def _reap_once(client: Any, url: str) -> None:
    with _REAP_LOCK:
        if url in _REAPED:
            return
        ce.reap_orphans(client)
        _REAPED.add(url)


def _finalize(client: Any, name: str, owner_pid: int) -> None:
    if os.getpid() == owner_pid:
        with suppress(Exception):
            ce.remove_verified(client, name)


class ContainerProvider(Provider):
    """Serve an env image in a container on ``engine`` (``docker``, ``podman`` or an API URL).

    ``app`` (an import path) overrides what the image serves, ``command`` the whole command;
    neither keeps the image's CMD.
    ``container_port=None``: no server inside (a task sandbox driven by exec): nothing is
    published, ``base_url`` is ``container://NAME`` and "healthy" means running.
    ``network="none"``: the container has no network at all (the engine's ``--network none``):
    no route out, none to the host's addresses, none to other containers. Its server is reached
    through a port on the host's 127.0.0.1 that this process relays into the container's own
    loopback (``netns_port``; needs a rootful engine and root here). Any other ``network``
    names an engine network to join (ports still published on loopback).
    """

    def __init__(
        self,
        image: str,
        *,
        app: str | None = None,
        command: list[str] | None = None,
        engine: str = "docker",
        name: str | None = None,
        run_id: str | None = None,
        env: Mapping[str, str] | None = None,
        user: str = "10001:10001",
        mem_limit: str = "1g",
        pids_limit: int = 256,
        cpus: float = 1.0,
        tmpfs_size: str = "64m",
        network: str | None = None,
        relax: Iterable[str] = (),
        startup_timeout: float = 60.0,
        log_lines: int = 50,
        container_port: int | None = CONTAINER_PORT,
        host_port: int | None = None,
        token: str | None = None,
    ) -> None:
        if not isinstance(image, str) or not image:
            raise ValueError("image: give an image name, e.g. 'openenv-train/echo-env:latest'")
        self.relax = frozenset(relax)
        unknown = self.relax - set(RELAXABLE)
        if unknown:
            raise ValueError(
                f"relax: unknown setting(s) {sorted(unknown)}; choose from {RELAXABLE}"
            )
        if not (isinstance(startup_timeout, (int, float)) and startup_timeout > 0):
            raise ValueError(f"startup_timeout must be > 0 seconds, got {startup_timeout!r}")
        self.image, self.app, self.engine, self.command = image, app, engine, command
        self.url = ce.engine_url(engine)
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.name = name or f"{NAME_PREFIX}-{self.run_id}-{uuid.uuid4().hex[:6]}"
        ce.name_filter(self.name)  # a name both engines accept, or ValueError
        self.env = dict(env or {})
        if token is None and TOKEN_ENV in self.env:
            token = self.env[TOKEN_ENV]
        #: the bearer token the server requires (None: none, as on a loopback-only port)
        self.token = check_token(token, "token") if token is not None else None
        self.user, self.mem_limit, self.pids_limit, self.cpus = user, mem_limit, pids_limit, cpus
        self.tmpfs_size, self.network = tmpfs_size, network
        self.startup_timeout, self.log_lines = float(startup_timeout), log_lines
        self.container_port, self.host_port = container_port, host_port
        self.base_url: str | None = None
        self._client: Any = None
        self._created = False
        self._finalizer: weakref.finalize | None = None
        self._owner_pid = os.getpid()
        self._relay: NetnsPort | None = None  # the host end of a network="none" container

    # ---- lifecycle ----------------------------------------------------------------------------

    def use_own_token(self) -> None:
        """Give this container a fresh token of its own unless one was chosen (before start)."""
        if self.token is None:
            self.token = secrets.token_urlsafe(32)

    def stop(self) -> None:
        """Kill and remove the container, then verify it is gone. Idempotent.

        An unreachable engine or a container still listed raises ``EngineError``.
        """
        if self.base_url is not None:
            forget_server_token(self.base_url)
        fin, self._finalizer, self.base_url = self._finalizer, None, None
        relay, self._relay = self._relay, None
        if relay is not None:
            relay.stop()
        if fin is not None:
            fin.detach()
        if not self._created or self._owner_pid != os.getpid():
            return
        ce.remove_verified(self._client, self.name)
        self._created = False

    @property
    def running(self) -> bool:
        if not self._created:
            return False
        try:
            state = self._client.api.inspect_container(self.name)["State"]
        except Exception:
            return False
        return bool(state.get("Running"))

    def logs(self, n: int | None = None) -> str:
        """The last ``n`` (default ``log_lines``) lines the container printed."""
        if not self._created:
            return ""
        try:
            out = self._client.api.logs(self.name, tail=n or self.log_lines)
        except Exception as e:
            return f"<logs unavailable: {type(e).__name__}>"
        return out.decode(errors="replace").rstrip()

    def hardening(self) -> ce.Hardening:
        """What the running container really has (see ``container_engine.Hardening``)."""
        return ce.inspect_hardening(self._client, self.name)

    def __repr__(self) -> str:
        return f"ContainerProvider({self.image!r}, name={self.name!r}, base_url={self.base_url!r})"

    # ---- steps (start_container_servers creates all first, then waits for all) -----------------

    def create_args(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(container config, host config) for the engine: hardening, limits, labels, port."""
        config: dict[str, Any] = {
            "name": self.name,
            "detach": True,
            "labels": ce.owner_labels(self.run_id),
            # the host that owns the container is its gateway: its clients all come from there
            "environment": {
                "PYTHONUNBUFFERED": "1",
                "OPENENV_TRAIN_QUOTA_EXEMPT_GATEWAY": "1",
                **self.env,
                **({TOKEN_ENV: self.token} if self.token is not None else {}),
            },
            "ports": [self.container_port],
            "stop_signal": "SIGKILL",
            "stop_timeout": 0,  # Podman: a forced remove never waits out a grace period
        }
        if self.command is not None:
            config["command"] = list(self.command)
        elif self.app is not None:
            config["command"] = serve_argv(self.app, self.container_port)
        # An init as PID 1 reaps every orphan (the engine's tini / catatonit), whatever the env runs.
        host: dict[str, Any] = {"init": True}
        if self.container_port is None:  # no server: nothing to publish or relay
            del config["ports"]
            if self.network is not None:
                host["network_mode"] = self.network
        elif self.network == "none":
            host["network_mode"] = "none"  # reached through a NetnsPort, never a published port
            del config["ports"]
        else:
            host["port_bindings"] = {self.container_port: ("127.0.0.1", self.host_port)}
            if self.network is not None:
                host["network_mode"] = self.network
        if "user" not in self.relax:
            config["user"] = self.user
        if "cap_drop" not in self.relax:
            host["cap_drop"] = ["ALL"]
        if "no_new_privileges" not in self.relax:
            host["security_opt"] = ["no-new-privileges"]
        if "read_only" not in self.relax:
            host["read_only"] = True
            host["tmpfs"] = {"/tmp": f"rw,nosuid,nodev,size={self.tmpfs_size}"}
        if "limits" not in self.relax:
            host["mem_limit"] = self.mem_limit
            host["pids_limit"] = self.pids_limit
            host["nano_cpus"] = int(self.cpus * 1e9)
            config["environment"].setdefault(CAP_ENV, str(self.session_bound()))
            if self.engine == "docker":  # Podman's API then also sets nproc, which a host
                # without CAP_SYS_RESOURCE refuses; its containers keep the host's nofile
                nofile = capacity.container_nofile(int(config["environment"][CAP_ENV]))
                host["ulimits"] = [{"Name": "nofile", "Soft": nofile, "Hard": nofile}]
        return config, host

    def session_bound(self) -> int:
        """The sessions this container's server may hold (``capacity.session_bound``): its
        memory limit, and Docker's port proxy (a local daemon's descriptor limit) when the port
        is published through it; a client past it gets ``CAPACITY_REACHED``, never a dropped
        handshake."""
        proxied = self.network != "none" and self.engine == "docker"
        return capacity.session_bound(
            mem_limit_bytes=capacity.parse_bytes(self.mem_limit),
            proxy_nofile=capacity.daemon_nofile("dockerd") if proxied else None,
        )

    def _spawn(self) -> None:
        if self._created:
            self.stop()
        if self._client is None:
            self._client = ce.connect(self.engine)
        _reap_once(self._client, self.url)
        api = self._client.api
        config, host = self.create_args()
        for attempt in range(1, PORT_RACE_TRIES + 1):
            try:
                api.create_container(
                    self.image, host_config=api.create_host_config(**host), **config
                )
                self._created = True
                api.start(self.name)
                break
            except Exception as e:
                self._created = bool(ce.list_exact(self._client, self.name))
                self.stop()
                if attempt < PORT_RACE_TRIES and self._lost_port_race(e):
                    continue
                self._start_failed(e)
        self._owner_pid = os.getpid()
        self._finalizer = weakref.finalize(self, _finalize, self._client, self.name, os.getpid())
        if self.container_port is None:
            self.base_url = f"container://{self.name}"
            return
        attrs = api.inspect_container(self.name)
        if self.network == "none":
            pid = int((attrs.get("State") or {}).get("Pid") or 0)
            relay = NetnsPort(pid, self.container_port, self.host_port)
            try:
                port = relay.start()
            except OSError as e:
                self._fail(f"cannot be reached from the host: {e}")
            self._relay = relay
            self._serving_at(f"http://127.0.0.1:{port}")
            return
        port = next((p for _, p in ce.published_ports(attrs) if p), None)
        if port is None:
            self._fail("has no published port")
        self._serving_at(f"http://127.0.0.1:{port}")

    def _lost_port_race(self, error: Exception) -> bool:
        """The engine chose a free host port and another process bound it before the engine
        did (Podman does so on a busy host): a new container gets another port."""
        return self.host_port is None and "address already in use" in str(error)

    def _start_failed(self, error: Exception) -> NoReturn:
        hint = (
            f"; build it first: openenv-train build PATH --tag {self.image}"
            if ce.status_code(error) == 404
            else ""
        )
        raise ServerStartError(
            f"could not start a container of {self.image!r} on {self.engine}: {error}{hint}"
        ) from error

    def _serving_at(self, base_url: str) -> None:
        self.base_url = base_url
        if self.token is not None:
            register_server_token(base_url, self.token)

    def wait_healthy(self) -> None:
        """Poll ``GET /health``; on exit or timeout stop and raise with logs and exit code."""
        assert self.base_url is not None
        if self.container_port is None:
            if not self.running:
                self._fail("exited as it started")
            return
        exited = lambda: not self.running  # noqa: E731
        wait_healthy(self.base_url, self.startup_timeout, exited, self._fail, check_every=0.5)

    def _fail(self, why: str) -> None:
        logs = self.logs()
        code: Any = None
        with suppress(Exception):
            code = self._client.api.inspect_container(self.name)["State"].get("ExitCode")
        self.stop()
        raise ServerStartError(
            f"container {self.name} ({self.image}) {why} (exit code {code}); last "
            f"{self.log_lines} log lines:\n{logs or '<empty>'}"
        )
