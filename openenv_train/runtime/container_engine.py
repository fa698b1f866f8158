"""Talking to Docker or Podman the same way: connect, remove-and-verify, hardening facts, reaping.

Podman serves the Docker API on its own socket, so one client (the ``docker`` SDK) drives both,
but the two engines answer differently, and everything here is written against both shapes:

- An exact name filter must be ``^NAME$``: Docker also matches ``^/NAME$`` but Podman matches
  nothing for it, so a leftover container would look removed.
- ``HostConfig.CapDrop`` is ``["ALL"]`` on Docker but the list of every capability on Podman:
  hardening is read from the container's bounding set (``CapBnd`` in ``/proc/1/status``).
- Not-found errors have different text (and Docker 29 changed its shapes again): only the HTTP
  status (404) is used, never the message.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.loopback import is_loopback
from .errors import CleanupError as CleanupError
from .errors import EngineError as EngineError

PROJECT = "openenv-train"
LABEL_PROJECT = "org.openenv-train.project"
LABEL_OWNER_PID = "org.openenv-train.owner-pid"
LABEL_OWNER_START = "org.openenv-train.owner-start"
LABEL_OWNER_HOST = "org.openenv-train.owner-host"
LABEL_RUN_ID = "org.openenv-train.run-id"

NAME_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")
DOCKER_SOCKET = "unix:///var/run/docker.sock"
PODMAN_SOCKET = "unix:///run/podman/podman.sock"


def engine_url(engine: str) -> str:
    """``docker`` / ``podman`` / a socket URL -> the API URL the SDK connects to."""
    if engine == "docker":
        return os.environ.get("DOCKER_HOST") or DOCKER_SOCKET
    if engine == "podman":
        return os.environ.get("OPENENV_TRAIN_PODMAN_URL") or PODMAN_SOCKET
    if isinstance(engine, str) and re.match(r"^(unix|tcp|http|https|ssh)://", engine):
        return engine
    raise ValueError(
        f"engine={engine!r}: use 'docker', 'podman' or an API URL such as "
        f"'unix:///run/podman/podman.sock'"
    )


#: the API version each engine URL negotiated, per process: the SDK asks ``/version`` on every
#: new client, which Podman answers by querying the system's package manager (0.4 s of CPU
#: each, against 1 ms for a ping), once per container start without it
_API_VERSIONS: dict[str, str] = {}


def connect(engine: str = "docker", timeout: float = 30.0) -> Any:
    """A ``docker.DockerClient`` for ``engine``, checked with a ping; ``EngineError`` if down.

    The first client of a URL negotiates the API version; later ones in this process reuse it.
    """
    try:
        import docker
    except ImportError as e:  # pragma: no cover - the docker extra is part of dev
        raise EngineError(
            "the container runtime needs the docker SDK: pip install 'openenv-train[docker]'"
        ) from e
    url = engine_url(engine)
    try:
        client = docker.DockerClient(
            base_url=url, timeout=int(timeout), version=_API_VERSIONS.get(url, "auto")
        )
        client.ping()
        _API_VERSIONS[url] = client.api.api_version
    except Exception as e:
        raise EngineError(
            f"container engine {engine!r} at {url} is not reachable ({type(e).__name__}); "
            "start it (dockerd, or `podman system service --time=0 unix:///run/podman/podman.sock`)"
        ) from e
    return client


def is_podman(version: Mapping[str, Any]) -> bool:
    """True for the ``/version`` answer of Podman's Docker-compatible service."""
    comps = version.get("Components") or []
    return any("podman" in str(c.get("Name", "")).lower() for c in comps)


def name_filter(name: str) -> dict[str, list[str]]:
    """The exact-name filter that works on both engines (``^NAME$``, never ``^/NAME$``).

    Names are ``[a-zA-Z0-9][a-zA-Z0-9_.-]*`` on both engines: only ``.`` needs escaping.
    """
    if not NAME_RE.match(name):
        raise ValueError(f"container name {name!r}: use letters, digits, '_', '.', '-'")
    return {"name": ["^" + name.replace(".", "\\.") + "$"]}


def names_in_listing(listing: Iterable[Mapping[str, Any]]) -> list[str]:
    """Container names from a ``/containers/json`` answer (Docker prefixes ``/``, Podman not)."""
    out = []
    for item in listing:
        for n in item.get("Names") or []:
            out.append(str(n).lstrip("/"))
    return out


def list_exact(client: Any, name: str) -> list[str]:
    """Containers named exactly ``name`` (any state). An unreachable engine raises ``EngineError``."""
    try:
        listing = client.api.containers(all=True, filters=name_filter(name))
    except Exception as e:
        raise EngineError(f"cannot list containers to verify {name!r}: {e}") from e
    return [n for n in names_in_listing(listing) if n == name]


def status_code(err: BaseException) -> int | None:
    """The HTTP status of an SDK error (``docker.errors.APIError``), or None: never its text."""
    resp = getattr(err, "response", None)
    code = getattr(resp, "status_code", None)
    return int(code) if isinstance(code, int) else None


def remove_verified(client: Any, name: str, *, attempts: int = 3) -> None:
    """Kill and remove ``name`` without a grace period, then prove it is gone.

    A 404 means already gone; any other failure (engine down, conflict) is raised, and so is a
    container still listed after removal (``CleanupError``).
    """
    last: BaseException | None = None
    for i in range(attempts):
        try:
            client.api.remove_container(name, force=True, v=True)
        except Exception as e:
            code = status_code(e)
            if code is None and not _is_api_error(e):
                raise EngineError(f"cannot remove container {name!r}: {e}") from e
            if code != 404:
                last = e  # e.g. 409 "removal already in progress": look again below
        left = list_exact(client, name)
        if not left:
            return
        time.sleep(0.2 * (i + 1))
    raise CleanupError(
        f"container {name!r} is still listed after {attempts} forced removals"
        + (f" (last error: HTTP {status_code(last)})" if last is not None else "")
    )


def _is_api_error(err: BaseException) -> bool:
    try:
        import docker.errors
    except ImportError:  # pragma: no cover
        return False
    return isinstance(err, docker.errors.APIError)


def cap_bnd(proc_status: str) -> int:
    """The capability bounding set from ``/proc/<pid>/status`` text; ``ValueError`` if missing."""
    m = re.search(r"^CapBnd:\s*([0-9a-fA-F]+)\s*$", proc_status, re.M)
    if m is None:
        raise ValueError("no CapBnd line in /proc/<pid>/status")
    return int(m.group(1), 16)


@dataclass(frozen=True)
class Hardening:
    """What a running container actually has, read from ``inspect`` plus ``/proc/1/status``."""

    user: str
    cap_bnd: int
    read_only: bool
    no_new_privileges: bool
    memory: int
    pids_limit: int
    nano_cpus: int
    network: str
    published: tuple[tuple[str, str], ...]  # (host ip, host port) of every published port

    @property
    def non_root(self) -> bool:
        user = self.user.split(":", 1)[0]
        return user not in ("", "0", "root")

    def problems(self) -> list[str]:
        """Every default this container breaks, in words (empty: hardened)."""
        out = []
        if not self.non_root:
            out.append(f"runs as root (user {self.user!r})")
        if self.cap_bnd:
            out.append(f"capability bounding set is {self.cap_bnd:#x}, not 0")
        if not self.read_only:
            out.append("root filesystem is writable")
        if not self.no_new_privileges:
            out.append("no-new-privileges is off")
        if not self.memory:
            out.append("no memory limit")
        if not self.pids_limit or self.pids_limit < 0:
            out.append("no pids limit")
        out += [
            f"port published on {ip or '0.0.0.0'}"
            for ip, _ in self.published
            if not is_loopback(ip)
        ]
        return out


def published_ports(attrs: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(host ip, host port) pairs of ``NetworkSettings.Ports`` (same shape on both engines)."""
    ports = (attrs.get("NetworkSettings") or {}).get("Ports") or {}
    return tuple(
        (str(b.get("HostIp", "")), str(b.get("HostPort", "")))
        for binds in ports.values()
        for b in binds or []
    )


def hardening_from(attrs: Mapping[str, Any], proc_status: str) -> Hardening:
    """Parse an ``inspect`` answer (Docker 20.10..29 or Podman 4 shape) and ``/proc/1/status``."""
    host = attrs.get("HostConfig") or {}
    opts = [str(o).replace("=", ":") for o in host.get("SecurityOpt") or []]
    return Hardening(
        user=str((attrs.get("Config") or {}).get("User") or ""),
        cap_bnd=cap_bnd(proc_status),
        read_only=bool(host.get("ReadonlyRootfs")),
        no_new_privileges=any(
            o == "no-new-privileges" or o == "no-new-privileges:true" for o in opts
        ),
        memory=int(host.get("Memory") or 0),
        pids_limit=int(host.get("PidsLimit") or 0),
        nano_cpus=int(host.get("NanoCpus") or 0),
        network=str(host.get("NetworkMode") or ""),
        published=published_ports(attrs),
    )


#: reads of /proc/1/status before giving up: Podman's Docker-compatible API now and then returns
#: a short exec's exit code with none of its output (seen in CI under load)
STATUS_READ_TRIES = 3


def inspect_hardening(client: Any, name: str) -> Hardening:
    """Hardening of a running container: its ``inspect`` plus ``/proc/1/status`` read inside it."""
    container = client.containers.get(name)
    for _ in range(STATUS_READ_TRIES):
        code, out = container.exec_run(["cat", "/proc/1/status"], user="")
        if code != 0:
            raise EngineError(f"cannot read /proc/1/status in {name!r} (exit {code})")
        text = out.decode(errors="replace")
        if "CapBnd:" in text:
            return hardening_from(container.attrs, text)
    raise EngineError(
        f"reading /proc/1/status in {name!r} returned no CapBnd line {STATUS_READ_TRIES} times "
        "(the engine lost the exec's output); check the engine's log"
    )


def host_gateway(network: Mapping[str, Any]) -> str | None:
    """The host's address on a network (its IPAM gateway), or None when the host has none."""
    for cfg in (network.get("IPAM") or {}).get("Config") or []:
        try:
            return str(ipaddress.ip_address(str(cfg.get("Gateway"))))
        except ValueError:
            continue
    return None


# ---- ownership labels and orphan reaping -----------------------------------------------------


def process_start(pid: int) -> str:
    """The kernel's start time of ``pid`` (``/proc/<pid>/stat`` field 22); '' if gone.

    Stored with the pid so a reused pid is never taken for the original owner.
    """
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def owner_labels(run_id: str) -> dict[str, str]:
    pid = os.getpid()
    return {
        LABEL_PROJECT: PROJECT,
        LABEL_OWNER_PID: str(pid),
        LABEL_OWNER_START: process_start(pid),
        LABEL_OWNER_HOST: socket.gethostname(),
        LABEL_RUN_ID: run_id,
    }


def owner_alive(labels: Mapping[str, str]) -> bool:
    """Whether the process that started a container still runs (always True for another host)."""
    if labels.get(LABEL_OWNER_HOST) != socket.gethostname():
        return True  # not ours to judge
    try:
        pid = int(labels.get(LABEL_OWNER_PID, ""))
    except ValueError:
        return False
    start = process_start(pid)
    return bool(start) and start == labels.get(LABEL_OWNER_START, start)


def orphans(listing: Iterable[Mapping[str, Any]]) -> list[str]:
    """Names of our containers (by project label) whose owner process is dead."""
    out = []
    for item in listing:
        labels = item.get("Labels") or {}
        if labels.get(LABEL_PROJECT) == PROJECT and not owner_alive(labels):
            out += names_in_listing([item])
    return out


def reap_orphans(client: Any) -> list[str]:
    """Remove (verified) every container of ours whose owner died, even by SIGKILL."""
    try:
        listing = client.api.containers(all=True, filters={"label": [f"{LABEL_PROJECT}={PROJECT}"]})
    except Exception as e:
        raise EngineError(f"cannot list containers to reap orphans: {e}") from e
    names = orphans(listing)
    for name in names:
        remove_verified(client, name)
    return names
