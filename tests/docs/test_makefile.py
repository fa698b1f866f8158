"""``make test`` sets up what its tests need: the container engines come before the suite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def dry_run(target: str) -> list[str]:
    """The commands ``make -n target`` would run, one per line (a ``\\`` continuation joined)."""
    make = shutil.which("make")
    assert make, "make is not installed: the README's two commands need it"
    out = subprocess.run(
        [make, "-n", "--no-print-directory", target], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.replace("\\\n", " ").splitlines()


def first(lines: list[str], needle: str) -> int:
    found = [i for i, line in enumerate(lines) if needle in line]
    assert found, f"`make -n test` no longer runs {needle!r}:\n" + "\n".join(lines)
    return found[0]


def test_make_test_sets_up_the_engines_before_the_suite() -> None:
    lines = dry_run("test")
    suite = first(lines, "-m pytest tests")
    engines = first(lines, "scripts/container_engines.sh")
    check = first(lines, "scripts/engines_ready.py")
    assert engines == check < suite  # one step: root sets up, anyone else is checked
    assert 'if [ "$(id -u)" = 0 ]; then bash scripts/container_engines.sh;' in lines[engines]


def test_without_engines_the_check_stops_with_one_line_naming_the_fix() -> None:
    env = {
        **os.environ,
        "DOCKER_HOST": "unix:///nonexistent/docker.sock",
        "OPENENV_TRAIN_PODMAN_URL": "unix:///nonexistent/podman.sock",
    }
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "engines_ready.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 1
    [line] = out.stderr.splitlines()
    assert "docker does not answer at unix:///nonexistent/docker.sock" in line
    assert "podman does not answer" in line and "`sudo make engines`" in line
