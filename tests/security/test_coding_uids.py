"""Root mode's uids (issue 35, finding 8): drawn from a block that no account, no subordinate-id
range (``/etc/subuid``: LXD, Podman, Docker's userns-remap) and no running process uses, checked
when the server first needs one; the old fixed range held LXD-style uids of host processes."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from coding_env import TASKS_BY_ID, run_tests
from coding_env import sandbox as sandbox_module
from coding_env.sandbox import SandboxUnavailable, pick_uid_range, taken_ids

ADD = "def add(a, b):\n    return a + b\n"


def test_the_block_skips_subordinate_ranges_and_process_ids() -> None:
    low, high = pick_uid_range([(1_000_000, 2_000_000_000), (2_000_500_000, 1)], size=1000)
    assert low >= 2_000_500_001 and high - low == 999
    assert pick_uid_range([], size=10) == (1_500_000_000, 1_500_000_009)


def test_no_free_block_is_a_clear_error() -> None:
    with pytest.raises(SandboxUnavailable, match="free uids"):
        pick_uid_range([(0, 2**32)], size=10)


def test_taken_ids_reads_accounts_subordinate_ranges_and_processes(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "passwd").write_text("lxd:x:999:999::/var/lib/lxd:/bin/false\n")
    (etc / "subuid").write_text("root:1000000:1000000000\n")
    proc = tmp_path / "proc"
    (proc / "42").mkdir(parents=True)
    (proc / "42" / "status").write_text("Name:\tx\nUid:\t1500000007\t1500000007\t0\t0\n")
    taken = taken_ids(str(proc), str(etc))
    assert {(999, 1), (1_000_000, 1_000_000_000), (1_500_000_007, 1)} <= set(taken)
    low, high = pick_uid_range(taken)
    assert not low <= 1_500_000_007 <= high


def test_a_host_process_uid_is_never_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process running under a uid the search would start at moves the block past it, and the
    runs' uids come from that block."""
    if os.geteuid() != 0:
        pytest.skip("starting a process under another uid needs root")
    uid = 1_500_000_123
    argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sleep", "60"]
    bystander = subprocess.Popen(argv)
    try:
        deadline = time.monotonic() + 5
        while (uid, 1) not in taken_ids() and time.monotonic() < deadline:
            time.sleep(0.01)  # setpriv has switched uid once its status says so
        sandbox_module.uid_range.cache_clear()
        monkeypatch.setattr(sandbox_module, "uid_range", sandbox_module.uid_range)
        low, high = sandbox_module.uid_range()
        assert not low <= uid <= high
        seen: list[int] = []
        real = sandbox_module._claim_uid

        def spy() -> int:
            seen.append(real())
            return seen[-1]

        monkeypatch.setattr(sandbox_module, "_claim_uid", spy)
        assert run_tests(ADD, TASKS_BY_ID["add"].tests).status == "ok"
        assert seen and all(low <= u <= high for u in seen)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
        sandbox_module.uid_range.cache_clear()
