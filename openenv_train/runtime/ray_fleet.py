"""A fleet of env servers on a Ray cluster: each server is a Ray actor owning one server process.

The actor runs a ``LocalProcessProvider`` on its node (the same launcher as local servers, so the
process dies with the actor, even on SIGKILL or a node loss). The fleet asks Ray for resources
(``cpus_per_server``, custom ``resources``) and a placement (``spread`` over nodes, ``pack``, or
a list of node ids), hands back each server's ``base_url``, and :meth:`RayServerGroup.heal`
finds dead servers (a failed ``GET /health`` or a dead actor/node) and starts replacements.

Bind address: servers bind ``127.0.0.1`` on their node by default, which every client on the same
machine reaches (a local multi-node cluster, or rollout workers placed on the server's node).
``bind_host="0.0.0.0"`` (or a node IP) makes servers reachable from other machines at the node's
IP; that requires an auth token (``token=`` or ``OPENENV_TRAIN_TOKEN``), which each server gets
as ``OPENENV_TRAIN_TOKEN`` and clients must send as ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..core.errors import ServerStartError
from ..core.loopback import is_loopback
from .health import health_state
from .local import LocalProcessProvider, _check_app
from .ray_cluster import RayConnection, import_ray, unplaced_requests
from .signals import raise_on_stop_signals

PLACEMENTS = ("spread", "pack")


class EnvServerActor:
    """Runs on a Ray node: owns one env server process started by ``LocalProcessProvider``."""

    def __init__(self, app: str, host: str, env: dict[str, str], startup_timeout: float) -> None:
        self.provider = LocalProcessProvider(
            app, host=host, env=env, startup_timeout=startup_timeout
        )

    def start(self) -> dict[str, Any]:
        ray = import_ray()
        url = self.provider.start()
        host = self.provider.host
        if not is_loopback(host):  # bound beyond loopback: advertise the node's address
            port = urlsplit(url).port
            url = f"http://{ray.util.get_node_ip_address()}:{port}"
        return {
            "base_url": url,
            "node_id": ray.get_runtime_context().get_node_id(),
            "pid": self.provider.pid,
        }

    def alive(self) -> bool:
        return self.provider.running

    def logs(self, n: int = 50) -> str:
        return self.provider.logs(n)

    def stop(self) -> None:
        self.provider.stop()


@dataclass
class RayServer:
    """One server of the fleet: its actor, URL, node and the server process id on that node."""

    actor: Any
    base_url: str
    node_id: str
    pid: int | None
    failed_checks: int = 0  # /health failures in a row while the actor answered


@functools.cache
def remote_class(cls: type) -> Any:
    """``ray.remote(cls)``, made once per class (each call would export the class again)."""
    return import_ray().remote(cls)


def strategy(placement: str | Sequence[str], index: int, *, replacing: bool = False) -> Any:
    """Ray's scheduling strategy for the ``index``-th actor of a placement.

    Node ids pin hard (the user named the nodes); a replacement pins soft, as its node may be the
    one that died.
    """
    if placement == "spread":
        return "SPREAD"
    if placement == "pack":
        return "DEFAULT"
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = list(placement)
    return NodeAffinitySchedulingStrategy(nodes[index % len(nodes)], soft=replacing)


def check_placement(placement: Any) -> str | list[str]:
    if isinstance(placement, str):
        if placement not in PLACEMENTS:
            raise ValueError(
                f"placement: {placement!r}; use 'spread' (over the nodes, Ray's best effort), 'pack' "
                "(Ray's default packing) or a list of node ids"
            )
        return placement
    nodes = list(placement or [])
    if not nodes or not all(isinstance(n, str) and n for n in nodes):
        raise ValueError(f"placement: {placement!r}; a list of node ids must name at least one")
    return nodes


def _token_for(host: str, token: str | None) -> str | None:
    token = token or os.environ.get("OPENENV_TRAIN_TOKEN") or None
    if not is_loopback(host) and not token:
        raise ValueError(
            f"bind_host={host!r} makes env servers reachable from other machines; give token= "
            "(or set OPENENV_TRAIN_TOKEN) so they require 'Authorization: Bearer <token>', or keep "
            "bind_host='127.0.0.1' (clients on the same machine or node)"
        )
    return token


class RayServerGroup:
    """N env servers on Ray; ``.base_urls``, ``.stop()`` and ``with`` like ``ServerGroup``.

    ``stats`` counts servers started, found dead and replaced (for the metrics). ``heal()``
    restores the fleet to its target size after servers or nodes die.
    """

    def __init__(
        self,
        app: str,
        *,
        cpus_per_server: float = 1.0,
        resources: Mapping[str, float] | None = None,
        placement: str | Sequence[str] = "spread",
        bind_host: str = "127.0.0.1",
        token: str | None = None,
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 60.0,
        health_timeout: float = 2.0,
        unhealthy_after: int = 3,
        replace_timeout: float = 30.0,
        connection: RayConnection | None = None,
    ) -> None:
        self.app = _check_app(app)
        if not (isinstance(cpus_per_server, (int, float)) and cpus_per_server >= 0):
            raise ValueError(f"cpus_per_server: {cpus_per_server!r}; use a number >= 0 (e.g. 1)")
        self.cpus_per_server = float(cpus_per_server)
        self.resources = dict(resources or {})
        self.placement = check_placement(placement)
        self.bind_host = bind_host
        self.token = _token_for(bind_host, token)
        self.env = dict(env or {})
        if self.token:
            self.env["OPENENV_TRAIN_TOKEN"] = self.token
        self.startup_timeout = float(startup_timeout)
        self.health_timeout = float(health_timeout)
        if not (isinstance(unhealthy_after, int) and unhealthy_after >= 1):
            raise ValueError(f"unhealthy_after: {unhealthy_after!r}; use an int >= 1 (e.g. 3)")
        self.unhealthy_after = unhealthy_after
        self.replace_timeout = float(replace_timeout)
        self.target = 0
        self.connection = connection
        self.servers: list[RayServer] = []
        self.stats = {"servers_started": 0, "servers_dead": 0, "servers_replaced": 0}
        #: seconds start_ray_servers took, the cluster connection included (None: not started so)
        self.startup_s: float | None = None
        self._placed = 0

    @property
    def base_urls(self) -> list[str]:
        return [s.base_url for s in self.servers]

    @property
    def node_ids(self) -> list[str]:
        return [s.node_id for s in self.servers]

    def __len__(self) -> int:
        return len(self.servers)

    def __iter__(self) -> Iterator[RayServer]:
        return iter(list(self.servers))

    # ---- lifecycle ---------------------------------------------------------------------------

    def _new_actor(self, replacing: bool) -> Any:
        actor = (
            remote_class(EnvServerActor)
            .options(
                num_cpus=self.cpus_per_server,
                resources=self.resources or None,
                scheduling_strategy=strategy(self.placement, self._placed, replacing=replacing),
                max_restarts=0,  # the fleet replaces a dead server itself (its URL changes)
                max_concurrency=2,  # ``alive`` answers while ``start`` runs: placed, starting
            )
            .remote(self.app, self.bind_host, self.env, self.startup_timeout)
        )
        self._placed += 1
        return actor

    def _start(self, n: int, timeout: float, *, all_or_none: bool = True) -> list[RayServer]:
        """Start ``n`` servers in parallel. ``all_or_none``: on any failure kill them all and
        raise; otherwise keep those that came up within ``timeout``, or that Ray had placed
        within it and that came up within ``startup_timeout`` more (a loaded node starts slowly;
        one that got no place is not waited for). The rest are killed."""
        ray = import_ray()
        actors = [self._new_actor(replacing=not all_or_none) for _ in range(n)]
        refs = [a.start.remote() for a in actors]
        pings = [a.alive.remote() for a in actors]  # answered once placed, while start runs
        try:
            ready, _ = ray.wait(refs, num_returns=n, timeout=timeout)
            if not all_or_none and len(ready) < n:
                ready = ready + self._wait_placed(refs, pings, ready)
        except BaseException:
            self._kill_actors(actors)
            raise
        servers, failures = [], []
        for actor, ref in zip(actors, refs, strict=True):
            if ref not in ready:
                failures.append("not placed or not healthy in time")
                continue
            try:
                info = ray.get(ref)
            except ray.exceptions.RayError as err:
                failures.append(str(err).strip().splitlines()[-1][:300])
                continue
            servers.append(RayServer(actor, info["base_url"], info["node_id"], info["pid"]))
        if failures and (all_or_none or not servers):
            self._kill_actors(actors)
            if all_or_none:
                raise ServerStartError(
                    f"{len(failures)} of {n} Ray env server(s) of {self.app} did not start within "
                    f"{timeout:.0f}s: {failures[0]}; if they were not placed, the cluster lacks "
                    f"the resources asked for (cpus_per_server={self.cpus_per_server}, "
                    f"resources={self.resources})"
                )
            return []
        self._kill_actors([a for a, r in zip(actors, refs, strict=True) if r not in ready])
        self.stats["servers_started"] += len(servers)
        return servers

    def _wait_placed(self, refs: list[Any], pings: list[Any], ready: list[Any]) -> list[Any]:
        """Of the starts still running, wait ``startup_timeout`` for those Ray has placed: their
        ``alive`` ping answered (the worker runs), or Ray holds no unplaced request of their
        shape (placed, the worker process still starting: slow on a loaded node)."""
        ray = import_ray()
        unready = [r for r in refs if r not in ready]
        answered, _ = ray.wait(pings, num_returns=len(pings), timeout=0)
        known = sum(1 for r, p in zip(refs, pings, strict=True) if p in answered and r in unready)
        unplaced = unplaced_requests({"CPU": self.cpus_per_server, **self.resources})
        placed = known if unplaced is None else max(known, len(unready) - unplaced)
        if not placed:
            return []
        late, _ = ray.wait(unready, num_returns=placed, timeout=self.startup_timeout)
        return late

    def start(self, n: int) -> RayServerGroup:
        """Start ``n`` servers (``start_ray_servers`` calls this)."""
        if not (isinstance(n, int) and n >= 1):
            raise ValueError(f"n: {n!r}; the number of env servers must be an int >= 1")
        raise_on_stop_signals()
        self.target = n
        self.servers = self._start(n, self.startup_timeout + 60)
        return self

    def scale(self, n: int) -> None:
        """Grow or shrink the fleet to ``n`` servers (shrinking stops the newest ones)."""
        if not (isinstance(n, int) and n >= 1):
            raise ValueError(f"n: {n!r}; a fleet keeps at least one server")
        self.target = n
        if n > len(self.servers):
            self.servers += self._start(n - len(self.servers), self.startup_timeout + 60)
        elif n < len(self.servers):
            extra, self.servers = self.servers[n:], self.servers[:n]
            self._kill(extra)

    def dead(self) -> list[int]:
        """Indices of servers that are gone (the actor or its node dead, or nothing listening at
        the server's address) and of those whose ``/health`` failed ``unhealthy_after`` checks in
        a row while something listens (hung; one answer a loaded machine held past
        ``health_timeout`` is not a death)."""
        ray = import_ray()
        if not self.servers:
            return []
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(len(self.servers), 32)) as pool:
            states = list(
                pool.map(
                    lambda s: health_state(s.base_url, self.health_timeout, self.token),
                    self.servers,
                )
            )
        refs = [s.actor.alive.remote() for s in self.servers]
        dead = []
        for i, (server, ref) in enumerate(zip(self.servers, refs, strict=True)):
            gone = states[i] == "refused"  # nothing listens: the server process is gone
            try:
                gone = gone or not ray.get(ref, timeout=self.health_timeout)
            except ray.exceptions.GetTimeoutError:
                pass  # the actor is slow to answer (or its node is dying): /health decides
            except ray.exceptions.RayError:
                gone = True
            server.failed_checks = 0 if states[i] == "ok" else server.failed_checks + 1
            if gone or server.failed_checks >= self.unhealthy_after:
                dead.append(i)
        return dead

    def heal(self) -> int:
        """Replace dead servers (and any missing below the target size); returns how many started.

        Replacements that Ray cannot place within ``replace_timeout`` (the cluster lost the
        capacity) are left out: the fleet runs smaller and the next ``heal`` tries again. One that
        Ray placed gets ``startup_timeout`` more to come up (a loaded node starts slowly).
        """
        dead = set(self.dead())
        if dead:
            self.stats["servers_dead"] += len(dead)
            self._kill([self.servers[i] for i in sorted(dead)], graceful=False)
            self.servers = [s for i, s in enumerate(self.servers) if i not in dead]
        missing = self.target - len(self.servers)
        if missing <= 0:
            return 0
        fresh = self._start(missing, self.replace_timeout, all_or_none=False)
        self.servers += fresh
        self.stats["servers_replaced"] += len(fresh)
        if not self.servers:
            raise ServerStartError(
                f"every Ray env server of {self.app} is dead and none could be started again"
            )
        return len(fresh)

    def _kill(self, servers: list[RayServer], graceful: bool = True) -> None:
        ray = import_ray()
        if graceful and servers:
            refs = [s.actor.stop.remote() for s in servers]
            ray.wait(refs, num_returns=len(refs), timeout=10)
        self._kill_actors([s.actor for s in servers])

    @staticmethod
    def _kill_actors(actors: list[Any], confirm_s: float = 10.0) -> None:
        """``ray.kill`` each actor, then wait until Ray answers calls to it with 'actor died'."""
        ray = import_ray()
        for actor in actors:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # already dead with its node: nothing to kill
                pass
        deadline = time.monotonic() + confirm_s
        pending = list(actors)
        while pending:  # ray.kill is asynchronous: a call may still be served for a moment
            still = []
            for actor in pending:
                try:
                    ray.get(actor.alive.remote(), timeout=max(0.1, deadline - time.monotonic()))
                    still.append(actor)
                except ray.exceptions.RayActorError:
                    pass  # dead, as it should be
                except Exception:  # GetTimeoutError: a node still being declared dead
                    pass
            pending = still
            if pending and time.monotonic() > deadline:
                raise RuntimeError(
                    f"{len(pending)} env server actor(s) still answer {confirm_s}s after ray.kill"
                )
            if pending:
                time.sleep(0.05)

    def stop(self) -> None:
        """Stop every server and kill its actor; disconnect Ray if this group connected. Idempotent."""
        servers, self.servers = self.servers, []
        try:
            self._kill(servers)
        finally:
            if self.connection is not None:
                self.connection.close()

    def __enter__(self) -> RayServerGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"RayServerGroup({self.app!r}, base_urls={self.base_urls!r})"


def start_ray_servers(
    app: str,
    n: int,
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    **options: Any,
) -> RayServerGroup:
    """Start ``n`` servers of ``app`` on Ray; returns a ``RayServerGroup`` (``base_urls``, ``stop``).

    Connects to ``address`` (``auto``, ``ray://host:10001``) unless this process is already
    connected; ``address=None`` starts a local cluster for the run (``num_cpus`` caps it). The
    group's ``stop()`` also disconnects what this call connected. ``options`` go to
    :class:`RayServerGroup` (``cpus_per_server``, ``resources``, ``placement``, ``bind_host``,
    ``token``, ``env``, ``startup_timeout``, ``health_timeout``, ``unhealthy_after``,
    ``replace_timeout``).
    """
    started = time.perf_counter()
    connection = RayConnection(address, num_cpus=num_cpus)
    try:
        group = RayServerGroup(app, connection=connection, **options)
        group.start(n)
    except BaseException:
        connection.close()
        raise
    group.startup_s = time.perf_counter() - started
    return group
