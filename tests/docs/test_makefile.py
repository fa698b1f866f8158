"""``make test`` sets up what its tests need: the container engines come before the suite."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from processes import default_stop_signals, gone
from server_helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]


def dry_run(target: str, *, fresh: bool = False) -> list[str]:
    """The commands ``make -n target`` would run, one per line (a ``\\`` continuation joined);
    ``fresh``: as in a fresh clone (``-B``: every file target is made again)."""
    make = shutil.which("make")
    assert make, "make is not installed: the README's two commands need it"
    out = subprocess.run(
        [make, "-n", "--no-print-directory", *(["-B"] if fresh else []), target],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.replace("\\\n", " ").splitlines()


def first(lines: list[str], needle: str) -> int:
    found = [i for i, line in enumerate(lines) if needle in line]
    assert found, f"`make -n test` no longer runs {needle!r}:\n" + "\n".join(lines)
    return found[0]


def suite_runs(lines: list[str]) -> list[int]:
    """The lines of ``lines`` that run tests (not the one collection that compiles first)."""
    return [
        i for i, line in enumerate(lines) if "-m pytest" in line and "--collect-only" not in line
    ]


def test_make_test_runs_the_vllm_suite_beside_the_main_suite() -> None:
    assert dry_run("test") == ["bash scripts/make_test.sh"]
    script = (ROOT / "scripts" / "make_test.sh").read_text().splitlines()
    steps = [line.strip() for line in script if "$MAKE" in line and "--no-print-directory" in line]
    # the vLLM venv made ready first, its suite started in the background, then the main suite
    assert steps[0].startswith("VLLM_PREPARE_ONLY=1 ") and "test-vllm ||" in steps[0]
    assert steps[1].endswith('test-vllm >"$LOG" 2>&1 &') and steps[2].endswith("test-main")
    assert "VLLM_PREPARE_ONLY" in (ROOT / "scripts" / "ci_vllm.sh").read_text()


def test_ctrl_c_on_make_test_stops_the_background_vllm_suite_too(tmp_path: Path) -> None:
    """A background job of a script ignores Ctrl-C: the script must stop it. A stand-in ``make``
    (``MAKE``) runs one long process per suite and writes its pid."""
    fake = tmp_path / "make"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        '[ -n "${VLLM_PREPARE_ONLY:-}" ] && exit 0\n'
        'echo $$ > "$PIDS/${@: -1}"; exec sleep 120\n'
    )
    fake.chmod(0o755)
    env = {**os.environ, "MAKE": str(fake), "PIDS": str(tmp_path)}
    proc = subprocess.Popen(
        ["bash", str(ROOT / "scripts" / "make_test.sh")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        start_new_session=True,  # its own process group, like a terminal's foreground job
        preexec_fn=default_stop_signals,  # Ctrl-C as at a terminal, however pytest was started
    )
    pid_files = [tmp_path / "test-vllm", tmp_path / "test-main"]
    wait_until(lambda: all(f.is_file() and f.read_text().strip() for f in pid_files), 30, "both")
    sleeps = [int(f.read_text()) for f in pid_files]
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the foreground group
    assert proc.wait(timeout=30) == 130
    assert all(gone(pid) for pid in sleeps), "a suite outlived Ctrl-C"


def test_make_test_sets_up_the_engines_before_the_suite() -> None:
    lines = dry_run("test-main")
    [suite] = suite_runs(lines)
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


def test_make_test_runs_files_side_by_side_in_their_order() -> None:
    lines = dry_run("test-main")
    [at] = suite_runs(lines)  # one run: the Ray tests too
    suite = lines[at]
    assert "-m pytest tests -n 4 --dist loadgroup" in suite and "-p no:randomly" in suite
    assert "--ignore" not in suite
    shuffle = dry_run("test-random")
    [at] = suite_runs(shuffle)
    shuffled = shuffle[at]
    assert "--dist loadgroup" in shuffled and "no:randomly" not in shuffled


def test_make_check_lints_then_runs_only_the_quick_tests() -> None:
    lines = dry_run("check")
    lint, [suite] = first(lines, "ruff check ."), suite_runs(lines)
    assert lint < suite and "-m quick" in lines[suite]


def test_a_fresh_install_is_compiled_by_one_collection_before_the_workers_start() -> None:
    """pip installs without compiling; one collection compiles what the tests import, so the
    workers, started at once, do not each compile the same modules (a fresh clone only)."""
    setup = [
        line
        for line in dry_run("setup", fresh=True)
        if "pip install" in line and "-c constraints" in line
    ]
    assert setup and all("--no-compile" in line for line in setup), setup
    for target in ("test-main", "test-random", "check"):
        lines = dry_run(target, fresh=True)
        collect = first(lines, "--collect-only")
        assert "-m pytest tests " in lines[collect] and collect < suite_runs(lines)[0], target


def test_every_quick_file_exists_and_is_marked_at_collection() -> None:
    """tests/quick.txt names files, not patterns: a renamed file must be renamed there too."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    root_conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(root_conftest)
    names = root_conftest.quick_files()
    assert len(names) >= 20
    missing = sorted(n for n in names if not (ROOT / "tests" / n).is_file())
    assert not missing, f"tests/quick.txt names files that do not exist: {missing}"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "quick", "-p", "no:randomly"]
        + [f"tests/{n}" for n in sorted(names)[:3]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:]
    collected = {line.split("::")[0] for line in out.stdout.splitlines() if "::" in line}
    assert collected == {f"tests/{n}" for n in sorted(names)[:3]}


def test_the_slow_groups_exist_and_go_to_the_workers_first(tmp_path: Path) -> None:
    """tests/slow.txt names groups of today's suite, and the scheduler hands them out first: with
    one worker the listed file runs before the files collected ahead of it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    root_conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(root_conftest)
    groups = root_conftest.slow_groups()
    assert len(groups) >= 10
    sessions = set(root_conftest.SESSION_GROUPS.values())
    missing = [g for g in groups if g not in sessions and not (ROOT / g).is_file()]
    assert not missing, f"tests/slow.txt names files that do not exist: {missing}"

    files = ["tests/cli/test_recipes.py", "tests/cli/test_configs_cmd.py"]
    (tmp_path / "slow.txt").write_text(f"# first\n{files[1]}  # 1 s\n")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "1",
            "--dist",
            "loadgroup",
            "-v",
            "-p",
            "no:randomly",
        ]
        + files,
        cwd=ROOT,
        env={**os.environ, "OPENENV_TRAIN_SLOW_LIST": str(tmp_path / "slow.txt")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:]
    ran = [line for line in out.stdout.splitlines() if " PASSED " in line]
    assert ran and all(files[1] in line for line in ran[: len(ran) // 2]), ran
    assert files[0] in ran[-1], ran
