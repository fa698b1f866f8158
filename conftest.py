"""Test setup every test directory shares (pytest loads this root conftest first).

Test directories have no ``__init__.py``: pytest puts each test's own directory on ``sys.path``,
so helpers beside a test import by name. Helpers that several directories use live in
``tests/support``, put on ``sys.path`` here. The library, the env packages and the recipes are
installed (``make setup``), so nothing else is added.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

SUPPORT = Path(__file__).resolve().parent / "tests" / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

# fixtures several directories share; each directory defines the inputs they take (``tiny_pair``)
pytest_plugins = ("tiny_models", "shared_servers", "cpu_profile")

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # TRL's rollout_func is "experimental"

# Tests run side by side in worker processes (pytest-xdist; the Makefile passes
# ``-n N --dist loadgroup``). Each test file stays on one worker, so its module fixtures (a built
# wheel, a started server) are paid once; the files of a directory that starts one shared heavy
# service per session (a Ray cluster, Chromium, Monarch's actor mesh) stay together on one worker
# too. (The notebooks are one file: a tutorial writes its files beside the notebook for a while,
# and each notebook's test checks that the checkout is as it was.) The groups are given to
# xdist's scheduler here: its `xdist_group` marker does not reach the scheduler under pytest 9.2,
# which no longer lets a plugin rename a test id.
SESSION_GROUPS = {"ray": "ray", "web": "browser", "forge": "monarch"}

TESTS = Path(__file__).resolve().parent / "tests"
# `make check`'s files: no server process, container, browser or training run (each line a file
# under tests/; a test in tests/docs checks that each one exists)
QUICK_LIST = TESTS / "quick.txt"


# the slowest worker groups, slowest first (scripts/slow_tests.py writes it from a measured run):
# handed out before the others, so no long file is left to run alone at the end
# (OPENENV_TRAIN_SLOW_LIST names another file: the scheduler's own test uses it)
SLOW_LIST = Path(os.environ.get("OPENENV_TRAIN_SLOW_LIST") or TESTS / "slow.txt")


def _listed(path: Path) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def quick_files() -> set[str]:
    return set(_listed(QUICK_LIST))


def slow_groups() -> list[str]:
    return _listed(SLOW_LIST) if SLOW_LIST.is_file() else []


def test_group(nodeid: str) -> str:
    """The worker group of a test id: its directory's session group, else its file."""
    path = nodeid.split("::", 1)[0]
    parts = path.split("/")
    if len(parts) > 2 and parts[0] == "tests" and parts[1] in SESSION_GROUPS:
        return SESSION_GROUPS[parts[1]]
    return path


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup``: xdist's scope scheduler over :func:`test_group`'s groups."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    slow_first = slow_groups()

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return test_group(nodeid)

        def _assign_work_unit(self, node) -> None:
            for group in reversed(slow_first):  # once the queue is built: the slowest first
                if group in self.workqueue:
                    self.workqueue.move_to_end(group, last=False)
            slow_first.clear()
            super()._assign_work_unit(node)

    return GroupScheduling(config, log)


def pytest_collection_modifyitems(config, items) -> None:  # noqa: ARG001
    quick = quick_files()
    for item in items:
        try:
            rel = Path(str(item.path)).resolve().relative_to(TESTS)
        except ValueError:
            continue
        if rel.as_posix() in quick:
            item.add_marker(pytest.mark.quick)
