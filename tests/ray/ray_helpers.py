"""Helpers the tests/ray modules share (the fixtures are in conftest.py)."""

from __future__ import annotations

import os
import sys
import time

import psutil
from processes import exited, is_forked_server

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
import ray  # noqa: E402  (the dev install includes the ray extra: a missing Ray fails loudly)

APP = "blackjack_env.server.app:app"
SERVER_CMD = "openenv_train.runtime.launch"
#: set in the environment of the test worker that holds the cluster, while it holds it, so
#: every process of the cluster and every env server it or its actors start carries it
CLUSTER_MARK = "OPENENV_TRAIN_TEST_RAY_CLUSTER"


def cluster_processes(session_dir: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if session_dir in cmd and ("raylet" in cmd or "gcs_server" in cmd):
            out.append(p)
    return out


def add_node(cluster, tries: int = 2, **node_args):
    """``cluster.add_node``, tried once more when the node's raylet did not register within Ray's
    fixed 30-s wait (seen on a 2-core machine the rest of the suite loads). The half-started
    node's processes (children of this process since the try began) are killed first. The first
    call, on a cluster without a head, starts the head."""
    for attempt in range(tries):
        me = psutil.Process()
        before = {p.pid for p in me.children(recursive=True)}
        try:
            return cluster.add_node(**node_args)
        except Exception as e:
            if "timed out during startup" not in str(e) or attempt == tries - 1:
                raise
            new = [p for p in me.children(recursive=True) if p.pid not in before]
            for p in new:
                try:
                    p.kill()
                except psutil.Error:
                    pass
            psutil.wait_procs(new, timeout=10)
    raise AssertionError("unreachable")


def alive_actors(class_name: str | None = None) -> list[dict]:
    """Actors the cluster still has registered as alive (optionally of one class)."""
    import ray._private.state as state

    return [
        a
        for a in state.actors().values()
        if a["State"] != "DEAD"
        and (class_name is None or class_name in a.get("ActorClassName", ""))
    ]


def wait_gone(pids: list[int], timeout: float = 30.0) -> list[int]:
    """The pids still running after ``timeout`` s (exited zombies count as gone)."""
    deadline = time.monotonic() + timeout
    while True:
        left = [pid for pid in pids if not exited(pid)]
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


def node_id_with(resource: str) -> str:
    for n in ray.nodes():
        if n["Alive"] and resource in n["Resources"]:
            return n["NodeID"]
    raise LookupError(resource)


def our_servers() -> set[int]:
    """Env server processes of this test: started by the cluster (its processes carry
    ``CLUSTER_MARK``) or by this process, from this interpreter's environment. Other test
    workers run their own servers at the same time; those are not ours to count."""
    bindir = os.path.dirname(sys.executable)
    me = os.getpid()
    out = set()
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if not cmd or os.path.dirname(cmd[0]) != bindir:
            continue
        try:
            # a fresh launcher, or a server forked from a zygote (it has the zygote's command)
            if SERVER_CMD not in cmd and not is_forked_server(p):
                continue
            if CLUSTER_MARK in p.environ() or me in {a.pid for a in p.parents()}:
                out.add(p.pid)
        except psutil.Error:  # gone meanwhile
            continue
    return out
