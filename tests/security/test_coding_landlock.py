"""The sandbox's filesystem view in each kernel case (issue 22): Landlock with a scratch folder
(ABI 3+, this machine), Landlock for reads only (ABI 1-2), and no Landlock (writes refused by
the filter, as before). The older kernels are simulated by telling the server a lower ABI; the
runs themselves are real."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from coding_env import TASKS_BY_ID, Limits, run_tests
from coding_env import landlock as landlock_module
from coding_env import sandbox as sandbox_module

ADD = "\ndef add(a, b):\n    return a + b\n"
TESTS = TASKS_BY_ID["add"].tests
WRITES = "import tempfile\nwith tempfile.TemporaryFile() as f:\n    f.write(b'x')\n" + ADD
READS_ETC = "open('/etc/hostname').read()\n" + ADD


@pytest.fixture
def private_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="coding-landlock-tmp-"))
    folder.chmod(0o711)  # the runs' uids (root mode) pass through it, as through /tmp
    monkeypatch.setenv("CODING_SCRATCH_DIR", str(folder))
    yield folder
    shutil.rmtree(folder)


def test_this_kernel_gives_every_run_its_view_and_scratch(private_tmp: Path) -> None:
    if landlock_module.abi() < landlock_module.SCRATCH_ABI:
        pytest.fail("this kernel lacks Landlock ABI 3; CI machines have it (Linux 6.2+)")
    result = run_tests(WRITES, TESTS)
    assert (result.status, result.filesystem, result.passed) == ("ok", "landlock", 3), result
    assert run_tests(READS_ETC, TESTS).status == "load_error"
    assert list(private_tmp.iterdir()) == []  # the scratch folder is gone


def test_the_scratch_is_removed_after_a_run_killed_at_the_deadline(private_tmp: Path) -> None:
    code = "open('left', 'w').write('x')\nwhile True:\n    pass\n" + ADD
    limits = Limits(cpu_seconds=5, wall_seconds=1.0)
    assert run_tests(code, TESTS, limits).status == "timeout"
    assert list(private_tmp.iterdir()) == []


@pytest.mark.parametrize(
    ("abi", "mode", "reads_etc"),
    [(2, "landlock-read-only", False), (0, "unrestricted-reads", True)],
)
def test_older_kernels_get_no_scratch_and_write_nothing(
    monkeypatch: pytest.MonkeyPatch, private_tmp: Path, abi: int, mode: str, reads_etc: bool
) -> None:
    monkeypatch.setattr(sandbox_module, "landlock_abi", lambda: abi)
    result = run_tests(WRITES, TESTS)
    assert (result.status, result.filesystem) == ("load_error", mode), result
    assert "PermissionError" in result.errors[0] or "No usable temporary" in result.errors[0]
    assert (run_tests(READS_ETC, TESTS).status == "ok") is reads_etc  # world-readable
    assert list(private_tmp.iterdir()) == []


def test_a_scratch_needs_abi_3() -> None:
    with pytest.raises(ValueError, match="ABI 3"):
        landlock_module.ruleset(2, "/tmp/x")
    with pytest.raises(ValueError, match="not available"):
        landlock_module.ruleset(0, None)
