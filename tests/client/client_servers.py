"""Our runtime serving the apps beside these tests (``ot_apps``, ``oe_apps``) in child processes."""

from __future__ import annotations

from pathlib import Path

from child_env import with_pythonpath

from openenv_train.runtime import LocalProcessProvider


def serve(app: str) -> LocalProcessProvider:
    """An unstarted provider for ``app``; the child finds the test apps by name."""
    return LocalProcessProvider(
        app, env=with_pythonpath(Path(__file__).parent), startup_timeout=120
    )
