"""One real multi-node Ray cluster on this machine for the tests/ray tests (one run of them).

Ray's own test utility starts a head and worker nodes as separate raylets (real processes, real
scheduling, real node failure when a node is removed). Nodes carry a custom resource named after
them so tests can pin actors. Health checks are tightened so a removed node is declared dead in
about a second instead of Ray's default of ~15 s. Shared helpers live in ``ray_helpers``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import ray
from ray_helpers import (
    CLUSTER_MARK,
    add_node,
    cluster_processes,
    our_servers,
    wait_gone,
    wait_no_actors,
)

RAY_TESTS = Path(__file__).resolve().parent
_cluster: Any = None


def _start_cluster() -> Any:
    """Head (2 CPUs) + node_a + node_b (1 CPU each); the driver connected."""
    from ray.cluster_utils import Cluster

    fast_failure = {"health_check_period_ms": 300, "health_check_failure_threshold": 3}
    # every process started from here on (raylets, the nodes tests add, their workers and the
    # servers those start) carries it; the other test workers' servers don't
    os.environ[CLUSTER_MARK] = "1"
    c = Cluster()
    # the head, without the log monitor (nothing reads it: log_to_driver=False; 20 s of CPU in
    # a suite's run) or the dashboard (no test opens it)
    add_node(
        c,
        num_cpus=2,
        resources={"head": 100},
        _system_config=fast_failure,
        include_log_monitor=False,
        include_dashboard=False,
    )
    add_node(c, num_cpus=1, resources={"node_a": 100})
    add_node(c, num_cpus=1, resources={"node_b": 100})
    ray.init(address=c.address, include_dashboard=False, log_to_driver=False)
    c.wait_for_nodes()
    return c


def _stop_cluster() -> None:
    """Shut the cluster down and check its raylets and GCS are gone (idempotent)."""
    global _cluster
    c, _cluster = _cluster, None
    if c is None:
        return
    session_dir = c.head_node.get_session_dir_path()
    os.environ.pop(CLUSTER_MARK, None)
    ray.shutdown()
    c.shutdown()
    deadline = time.monotonic() + 20
    while cluster_processes(session_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = cluster_processes(session_dir)
    assert not left, f"raylet/gcs_server processes left behind: {[p.pid for p in left]}"


@pytest.fixture
def cluster() -> Any:
    """One real multi-node cluster for this directory's tests, started by the first that asks
    and shut down after the last of them (see ``pytest_runtest_teardown``)."""
    global _cluster
    if _cluster is None:
        _cluster = _start_cluster()
    return _cluster


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """After the last Ray test in a row (the next test is elsewhere, or none): shut the cluster
    down there, not at the end of the session. Its raylets, GCS and agents answer health checks
    every 300 ms; kept up for the rest of a worker's tests, that was CPU the others needed."""
    result = yield
    if nextitem is None or RAY_TESTS not in nextitem.path.parents:
        _stop_cluster()
    return result


def pytest_sessionfinish() -> None:
    if _cluster is not None:  # interrupted between Ray tests
        _stop_cluster()


@pytest.fixture
def no_leaks(cluster):
    """After the test: no actor alive in the cluster and no env server process left."""
    before = our_servers()
    yield
    left = wait_no_actors()
    assert not left, f"actors left registered: {[a['ActorClassName'] for a in left]}"
    servers = sorted(our_servers() - before)
    assert not wait_gone(servers), f"env server processes left behind: {servers}"
