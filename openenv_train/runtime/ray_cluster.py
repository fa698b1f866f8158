"""Connecting to Ray: an existing cluster (``auto``, ``ray://host:port``, ``host:port``) or a
local one started for the run (``address=None``), and disconnecting only what we connected.

Ray is an optional extra (``pip install 'openenv-train[ray]'``); importing this module does not
import Ray, so the core stays light.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


def import_ray() -> Any:
    """``ray``, or an error that says how to install it."""
    try:
        import ray
    except ImportError as err:
        raise ImportError(
            "runtime 'ray' needs Ray: pip install 'openenv-train[ray]' (or pip install ray)"
        ) from err
    return ray


def unplaced_requests(bundle: dict[str, float]) -> int | None:
    """How many actor or task requests of exactly this resource shape Ray has not placed yet
    (waiting for resources, or infeasible), or ``None`` where the cluster cannot say.

    Ray takes a request's resources when it places it, before the worker process starts, so this
    tells a request that is waiting for capacity from one whose worker is still starting.
    """
    ray = import_ray()
    want = {k: float(v) for k, v in bundle.items() if v}
    try:
        from ray.autoscaler.v2.sdk import get_cluster_status

        status = get_cluster_status(ray.get_runtime_context().gcs_address, timeout=5)
        demands = status.resource_demands.ray_task_actor_demand
    except Exception:  # a Ray without this report, or a ray:// client: unknown
        return None
    return sum(
        request.count
        for demand in demands
        for request in demand.bundles_by_count
        if {k: float(v) for k, v in request.bundle.items() if v} == want
    )


def check_address(address: Any) -> str | None:
    """``None`` (a local cluster for this run), ``auto``, ``ray://host:port`` or ``host:port``."""
    if address is None:
        return None
    if not isinstance(address, str) or not address.strip():
        raise ValueError(
            f"ray.address: {address!r} is not an address; use null (a local cluster started for "
            "the run), 'auto' (the cluster on this machine), 'ray://host:10001' or 'host:6379'"
        )
    address = address.strip()
    if address != "auto" and not address.startswith("ray://") and ":" not in address:
        raise ValueError(
            f"ray.address: {address!r} has no port; use 'auto', 'ray://host:10001' or 'host:6379'"
        )
    return address


class RayConnection:
    """``ray.init`` unless this process is already connected; :meth:`close` undoes only our init.

    ``address=None`` starts a local single-node cluster for the run (``num_cpus`` caps it), which
    ``close`` shuts down again. Actors are never detached: if this driver dies, Ray reclaims them.
    """

    def __init__(self, address: str | None = None, *, num_cpus: int | None = None) -> None:
        ray = import_ray()
        self.address = check_address(address)
        self.owned = False
        self._reaper: subprocess.Popen[bytes] | None = None
        if ray.is_initialized():
            return
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "configure_logging": False,
        }
        if self.address is not None:
            kwargs["address"] = self.address
        else:  # "local": a new cluster; plain ray.init() would join any cluster found running here
            kwargs["address"] = "local"
            if num_cpus is not None:
                kwargs["num_cpus"] = num_cpus
        # Workers import openenv_train from this interpreter's environment (same machine) or
        # from the cluster's image; nothing is uploaded.
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(**kwargs)
        self.owned = True
        self._reaper = _start_reaper() if self.address is None else None

    def close(self) -> None:
        """``ray.shutdown()`` if this object connected (and, for a local cluster, started) Ray."""
        if self.owned:
            self.owned = False
            import_ray().shutdown()
            if self._reaper is not None:
                self._reaper.kill()
                self._reaper.wait()

    def __enter__(self) -> RayConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _start_reaper() -> subprocess.Popen[bytes] | None:
    """A watcher that kills the local cluster's processes if this driver dies uncleanly."""
    from .ray_reaper import descendants

    pids = [str(p) for p in descendants(os.getpid())]
    if not pids:
        return None
    return subprocess.Popen(
        [sys.executable, "-m", "openenv_train.runtime.ray_reaper", str(os.getpid()), *pids],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # survives a SIGKILL of our process group
    )


class RaySettings(BaseModel):
    """The ``ray:`` block of a recipe's env section (used when ``runtime: ray``).

    The number of servers stays the env section's ``num_servers``.
    """

    model_config = ConfigDict(extra="forbid")

    #: null: a local cluster started for the run; 'auto': the cluster running on this machine;
    #: 'ray://head:10001' (Ray client) or 'head:6379'
    address: str | None = None
    #: CPUs Ray reserves per env server (fractions allowed; 0 reserves nothing)
    cpus_per_server: float = Field(1.0, ge=0)
    #: custom resources per server, e.g. {env_node: 1} to keep servers on nodes that offer it
    resources: dict[str, float] = Field(default_factory=dict)
    #: 'spread' over nodes, 'pack', or a list of node ids
    placement: str | list[str] = "spread"
    #: where each server binds on its node; beyond loopback needs OPENENV_TRAIN_TOKEN set
    bind_host: str = "127.0.0.1"
    #: CPUs of the local cluster started when address is null (null: all of this machine's)
    num_cpus: int | None = Field(None, ge=1)
    #: 0: the rollout engine runs on the driver; M > 0: M rollout workers on Ray, each on the
    #: servers of its node, calling the trainer's policy through a loopback endpoint
    rollout_workers: int = Field(0, ge=0)
    #: CPUs Ray reserves per rollout worker (0 reserves nothing)
    cpus_per_worker: float = Field(0.0, ge=0)

    @field_validator("address")
    @classmethod
    def _address(cls, v: Any) -> str | None:
        return check_address(v)

    def fleet_options(self) -> dict[str, Any]:
        """Keyword arguments for ``start_ray_servers``."""
        return {
            "address": self.address,
            "num_cpus": self.num_cpus,
            "cpus_per_server": self.cpus_per_server,
            "resources": self.resources,
            "placement": self.placement,
            "bind_host": self.bind_host,
        }
