"""``--cpu-profile FILE``: the CPU seconds each test's set-up, call and tear-down cost.

On 2 cores the suite is CPU-bound, so its wall time is its CPU time over two: a test's CPU cost,
not its (contended) duration, is what to cut. Each phase appends a JSON line: the test id, the
phase, its wall seconds and the CPU seconds of the test worker and every process under it (the
servers, kernels, Ray nodes and trainers it started, those that ended in the phase included: a
process's CPU passes to its parent's children's times once it is waited for), and apart, the CPU
seconds every container and the container engines' daemons spent meanwhile (Docker's and
Podman's cgroups, where cgroup v1 shows them, and dockerd, containerd and Podman's service: tests
on the other workers may have spent some). Not counted: processes that outlived the parent that
started them (Ray's daemonized raylets and workers among them). ``python scripts/test_cpu.py FILE``
prints the tables.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import psutil
import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-profile",
        metavar="FILE",
        default=None,
        help="append each test phase's CPU seconds (its worker and every process under it)",
    )


def tree_cpu_seconds() -> dict[int, float]:
    """Each process of this tree: its CPU seconds, its waited-for children's included."""
    me = psutil.Process()
    out = {}
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except psutil.Error:  # ended meanwhile: its parent's children's times will hold it
            continue
        out[p.pid] = t.user + t.system + t.children_user + t.children_system
    return out


#: cgroup v1 CPU accounting of all Docker and all Podman containers (nanoseconds)
CONTAINER_CGROUPS = [
    Path("/sys/fs/cgroup/cpuacct/docker/cpuacct.usage"),
    Path("/sys/fs/cgroup/cpuacct/libpod_parent/cpuacct.usage"),
]


#: the container engines' own processes (their API calls, image builds and container set-up)
ENGINE_DAEMONS = {"dockerd", "containerd", "podman"}


def engines_cpu_seconds() -> float:
    """All containers' CPU and the engines' daemons' (whichever test made them work)."""
    total = 0.0
    for path in CONTAINER_CGROUPS:
        try:
            total += int(path.read_text()) / 1e9
        except (OSError, ValueError):  # no engine, or cgroup v2: not measured
            pass
    for p in psutil.process_iter(["name"]):
        if p.info["name"] in ENGINE_DAEMONS:
            try:
                t = p.cpu_times()
            except psutil.Error:
                continue
            total += t.user + t.system
    return total


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    yield from _measured(item, "setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    yield from _measured(item, "call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item):
    yield from _measured(item, "teardown")


def _measured(item: pytest.Item, phase: str):
    path = item.config.getoption("--cpu-profile")
    if not path:
        yield
        return
    before, in_engines, started = tree_cpu_seconds(), engines_cpu_seconds(), time.monotonic()
    yield
    after, wall = tree_cpu_seconds(), time.monotonic() - started
    in_engines = engines_cpu_seconds() - in_engines
    row = {
        "test": item.nodeid,
        "phase": phase,
        "wall": round(wall, 3),
        "cpu": round(sum(after.values()) - sum(before.values()), 3),
        "engines": round(in_engines, 3),
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
    }
    with Path(path).open("a") as f:  # one short line per write: workers' lines don't mix
        f.write(json.dumps(row) + "\n")
