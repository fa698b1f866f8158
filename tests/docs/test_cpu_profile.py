"""``--cpu-profile`` counts the CPU of the processes a test starts, not its waits, and
``scripts/test_cpu.py`` ranks by it (the measure `make test`'s speed work goes by)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TESTS = """
import subprocess, sys, time

BURN = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 1.5: pass"


def test_burns_in_a_child():
    subprocess.run([sys.executable, "-c", BURN], check=True)


def test_waits():
    time.sleep(1.5)
"""


def test_the_profile_counts_a_childs_cpu_and_not_a_wait(tmp_path: Path) -> None:
    (tmp_path / "test_pair.py").write_text(TESTS)
    profile = tmp_path / "cpu.jsonl"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "cpu_profile", "-p", "no:randomly"]
        + ["-p", "no:cacheprovider", "--cpu-profile", str(profile), "test_pair.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tests" / "support")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [json.loads(line) for line in profile.read_text().splitlines()]
    assert {r["phase"] for r in rows} == {"setup", "call", "teardown"}
    call = {r["test"].split("::")[1]: r for r in rows if r["phase"] == "call"}
    assert call["test_burns_in_a_child"]["cpu"] >= 1.4, call
    assert call["test_waits"]["cpu"] < 0.5 and call["test_waits"]["wall"] >= 1.5, call
    table = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "test_cpu.py"), str(profile), "--top", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert table.returncode == 0, table.stderr
    ranked = [line for line in table.stdout.splitlines() if "::" in line]
    assert ranked and ranked[0].endswith("test_pair.py::test_burns_in_a_child"), table.stdout
