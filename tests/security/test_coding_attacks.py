"""The coding sandbox's attack suite: each finding of the audit (issue 22, findings 1, 2, 3, 6) as
an attack run next to an honest victim session, in every mode the project ships:

- ``root``: this process (CI runs as root): each run under a uid of its own;
- ``non_root``: the same rounds in a process dropped to uid 10001 with ``setpriv``, with the env
  package installed in a folder that uid owns (the "server owns its install" case);
- ``container``: the coding_env image on Docker and on Podman, attacks and victim over the client.

Invariants of every round: the attacker's reward is in range, the victim's score is untouched,
nothing is left behind (processes, files), the runner is unchanged, no one reached the host's
world-writable unix socket, and the victim's output stays private.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from attacks import ATTACKS, SERVER_SECRET, Outcome, check_invariants, run_round
from processes import gone

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
NON_ROOT_UID = 10001


@pytest.fixture
def private_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A scratch root for this test alone (runs' scratch folders are made there, so the leftover
    check counts only this test's): traversable by the runs' uids, like /tmp."""
    folder = Path(tempfile.mkdtemp(prefix="coding-private-tmp-"))
    folder.chmod(0o711)
    monkeypatch.setenv("CODING_SCRATCH_DIR", str(folder))
    yield folder
    shutil.rmtree(folder)


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_as_root(attack: str, private_tmp: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("this process is not root: test_attack_non_root covers this mode")
    check_invariants(run_round(attack))


def _python_for(uid: int, pythonpath: str) -> str:
    """An interpreter that ``uid`` can run with the project's packages on ``pythonpath``."""
    candidates = [os.path.realpath(sys.executable), f"/usr/bin/python3.{sys.version_info[1]}"]
    for python in candidates:
        check = (
            "import pydantic, subprocess, sys; subprocess.run([sys.executable, '-V'], check=True)"
        )
        probe = _as_uid(uid, [python, "-c", check], pythonpath)  # it can start the runner too
        if probe.returncode == 0:
            return python
    pytest.fail(f"no Python that uid {uid} can run with pydantic: tried {candidates}")


def _as_uid(
    uid: int, argv: list[str], pythonpath: str, timeout: float = 30, tmpdir: str | None = None
):
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": pythonpath, "LANG": "C.UTF-8"}
    if tmpdir is not None:
        env["CODING_SCRATCH_DIR"] = tmpdir
    cmd = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def non_root_outcomes() -> Iterator[dict[str, Outcome]]:
    """Every round, run once in a process of uid 10001 that owns its copy of the env package."""
    if os.geteuid() != 0:  # this process is the non-root mode
        yield {name: run_round(name) for name in ATTACKS}
        return
    install = Path(tempfile.mkdtemp(prefix="coding-non-root-"))
    try:
        yield _run_driver_as(NON_ROOT_UID, install)
    finally:
        shutil.rmtree(install)


def _run_driver_as(uid: int, install: Path) -> dict[str, Outcome]:
    shutil.copytree(ROOT / "envs" / "coding_env" / "coding_env", install / "coding_env")
    shutil.copy(HERE / "attacks.py", install / "attacks.py")
    shutil.copy(HERE / "attack_driver.py", install / "attack_driver.py")
    (install / "tmp").mkdir()
    for path in [install, *install.rglob("*")]:
        os.chown(path, uid, uid)
    site = next(p for p in sys.path if p.endswith("site-packages"))
    pythonpath = f"{install}:{ROOT}:{site}"
    python = _python_for(uid, pythonpath)
    argv = [python, str(install / "attack_driver.py")]
    done = _as_uid(uid, argv, pythonpath, timeout=600, tmpdir=str(install / "tmp"))
    assert done.returncode == 0, done.stderr[-3000:]
    outcomes = [Outcome(**json.loads(line)) for line in done.stdout.splitlines()]
    return {o.attack: o for o in outcomes}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_non_root(attack: str, non_root_outcomes: dict[str, Outcome]) -> None:
    check_invariants(non_root_outcomes[attack])


# --- the container mode -------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["docker", "podman"])
def coding_container(request: pytest.FixtureRequest) -> Iterator[tuple[str, object]]:
    """The coding_env image on each engine with the runtime's defaults (non-root, no
    capabilities, read-only root, memory and pids limits)."""
    engine = request.param
    sys.path.insert(0, str(ROOT / "tests" / "runtime"))
    from rt_containers import BASE_IMAGE, IMAGE_PREFIX, engine_client

    from openenv_train.cli.env_build import build_image
    from openenv_train.runtime import ContainerProvider

    client = engine_client(engine)
    tag = f"{IMAGE_PREFIX}/coding_env:latest"
    build_image(ROOT / "envs" / "coding_env", tag, base_image=BASE_IMAGE, engine=engine)
    env = {"CODING_CPU_SECONDS": "2", "CODING_WALL_SECONDS": "6"}
    with ContainerProvider(tag, engine=engine, env=env, startup_timeout=120) as provider:
        container = client.containers.get(provider.name)
        done = container.exec_run(["python3", "-c", _WRITE_SECRET])  # as the server's uid
        assert done.exit_code == 0, done.output
        yield provider.base_url, container


CONTAINER_SECRET = "/tmp/server-secret"
_WRITE_SECRET = (
    f"import os; fd = os.open({CONTAINER_SECRET!r}, os.O_WRONLY | os.O_CREAT, 0o600); "
    f"os.write(fd, {SERVER_SECRET.encode()!r})"
)


def _container_submit(url: str):
    from coding_env import CodeAction, CodingEnv

    def submit(code: str) -> tuple[float, str, str]:
        with CodingEnv(base_url=url, timeout=60).sync() as env:
            env.reset(task_id="add")
            result = env.step(CodeAction(code=code))
            return result.reward, result.observation.status, result.observation.output

    return submit


_LEFTOVERS = """
import json, os
runs = []
for pid in filter(str.isdigit, os.listdir('/proc')):
    if int(pid) == os.getpid():
        continue  # this one-liner names runner.py too
    try:
        if b'runner.py' in open('/proc/%s/cmdline' % pid, 'rb').read():
            runs.append(int(pid))
    except OSError:
        pass
files = [n for n in os.listdir('/tmp') + os.listdir('/dev/shm') if n != 'server-secret']
print(json.dumps([runs, files]))
"""


def _container_leftovers(container) -> tuple[list[int], list[str]]:
    """Sandbox processes still running, and files in the writable places (same on both engines:
    a Python one-liner inside the container, not the engines' differing ``top``). Asked again
    for up to 10 s while either is there: a run still ending when the probe asks (a scratch
    folder was seen once, under load) is gone by then; a leak is not."""
    deadline = time.monotonic() + 10
    while True:
        found = container.exec_run(["python3", "-c", _LEFTOVERS]).output.decode()
        lines = found.strip().splitlines()
        if not lines:  # an exec that printed nothing (seen on Podman under load): ask again
            assert time.monotonic() < deadline, "the leftover probe printed nothing"
            time.sleep(0.1)
            continue
        runs, files = json.loads(lines[-1])
        if not (runs or files) or time.monotonic() > deadline:
            return runs, files
        time.sleep(0.1)


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_in_the_container(attack: str, coding_container) -> None:
    url, container = coding_container
    outcome = run_round(attack, submit=_container_submit(url), secret_path=CONTAINER_SECRET)
    outcome.left_processes, outcome.left_files = [], []  # the host's view says nothing here
    check_invariants(outcome)
    extra, files = _container_leftovers(container)
    assert not extra and not files, (extra, files)
    import httpx

    assert httpx.get(url + "/health", timeout=10).json()["status"] == "healthy"


def test_the_container_runs_under_an_init(coding_container) -> None:
    """PID 1 is the engine's init, so an orphan never stays a zombie (finding 1)."""
    _, container = coding_container
    container.reload()
    # read from the host: the engine's exec API once answered an empty output under load
    pid_1 = psutil.Process(container.attrs["State"]["Pid"]).cmdline()[0]
    assert pid_1.endswith(("docker-init", "podman-init", "tini", "catatonit")), pid_1


def test_a_host_process_under_the_runs_uid_survives(monkeypatch) -> None:
    """The old sandbox swept every process of its random uid after a run, a host process of that
    uid included; the sweep is gone, and the run itself cannot signal it (finding 6)."""
    if os.geteuid() != 0:
        pytest.skip("starting a process under another uid needs root")
    import random

    from coding_env import TASKS_BY_ID, run_tests

    uid = 1_234_567
    monkeypatch.setattr(random, "randint", lambda low, high: uid)
    argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sleep", "60"]
    bystander = subprocess.Popen(argv)
    try:
        code = "import os\nfor pid in (-1, 0):\n    try:\n        os.kill(pid, 9)\n    except OSError:\n        pass\n"
        result = run_tests(code + "def add(a, b):\n    return a + b", TASKS_BY_ID["add"].tests)
        assert result.status == "ok"
        # a kill the run made would end it at once
        assert not gone(bystander.pid, within=0.5), "a process of the run's uid was killed"
    finally:
        bystander.kill()
        bystander.wait()
