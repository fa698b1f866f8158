"""One real multi-node Ray cluster on this machine for the whole tests/ray session.

Ray's own test utility starts a head and worker nodes as separate raylets (real processes, real
scheduling, real node failure when a node is removed). Nodes carry a custom resource named after
them so tests can pin actors. Health checks are tightened so a removed node is declared dead in
about a second instead of Ray's default of ~15 s.
"""

from __future__ import annotations

import os
import sys
import time

import psutil
import pytest

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
import ray  # noqa: E402  (the dev install includes the ray extra: a missing Ray fails loudly)

APP = "blackjack_env.server.app:app"
SERVER_CMD = "openenv_train.runtime.launch"


def _cluster_processes(session_dir: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if session_dir in cmd and ("raylet" in cmd or "gcs_server" in cmd):
            out.append(p)
    return out


def alive_actors(class_name: str | None = None) -> list[dict]:
    """Actors the cluster still has registered as alive (optionally of one class)."""
    import ray._private.state as state

    return [
        a
        for a in state.actors().values()
        if a["State"] != "DEAD"
        and (class_name is None or class_name in a.get("ActorClassName", ""))
    ]


def wait_gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    """The pids still running after ``timeout`` s (zombies count as gone)."""
    deadline = time.monotonic() + timeout
    while True:
        left = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    left.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def wait_no_actors(timeout: float = 15.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        left = alive_actors()
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


@pytest.fixture(scope="session")
def cluster():
    """Head (2 CPUs) + node_a + node_b (1 CPU each); the driver is connected for the session."""
    from ray.cluster_utils import Cluster

    fast_failure = {"health_check_period_ms": 300, "health_check_failure_threshold": 3}
    c = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 2, "resources": {"head": 100}, "_system_config": fast_failure},
    )
    c.add_node(num_cpus=1, resources={"node_a": 100})
    c.add_node(num_cpus=1, resources={"node_b": 100})
    ray.init(address=c.address, include_dashboard=False, log_to_driver=False)
    c.wait_for_nodes()
    session_dir = c.head_node.get_session_dir_path()
    try:
        yield c
    finally:
        ray.shutdown()
        c.shutdown()
        deadline = time.monotonic() + 20
        while _cluster_processes(session_dir) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _cluster_processes(session_dir)
        assert not left, f"raylet/gcs_server processes left behind: {[p.pid for p in left]}"


def node_id_with(resource: str) -> str:
    for n in ray.nodes():
        if n["Alive"] and resource in n["Resources"]:
            return n["NodeID"]
    raise LookupError(resource)


def our_servers() -> set[int]:
    """Env server processes run by this interpreter's environment (Ray workers share it)."""
    bindir = os.path.dirname(sys.executable)
    out = set()
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if SERVER_CMD in cmd and cmd and os.path.dirname(cmd[0]) == bindir:
            out.add(p.pid)
    return out


@pytest.fixture
def no_leaks(cluster):
    """After the test: no actor alive in the cluster and no env server process left."""
    before = our_servers()
    yield
    left = wait_no_actors()
    assert not left, f"actors left registered: {[a['ActorClassName'] for a in left]}"
    servers = sorted(our_servers() - before)
    assert not wait_gone(servers), f"env server processes left behind: {servers}"


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:  # the recipes package lives in the repository, not in the install
    sys.path.insert(0, ROOT)
