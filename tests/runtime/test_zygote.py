"""Local servers forked from the owner's zygote: one zygote per owner, each server what a fresh
``launch`` would be (its environment, its ``sys.path``, its own process group), a module written
after the zygote started still served, and ``OPENENV_TRAIN_FORK_SERVERS=0`` for the old way."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest
from child_env import with_pythonpath
from processes import exited, is_forked_server, is_zygote
from rt_info import ENV, HERE, info

from openenv_train.runtime import LocalProcessProvider, start_local_servers


def test_servers_of_one_owner_fork_from_one_zygote_each_in_its_own_group() -> None:
    with start_local_servers("rt_apps:app", 2, env={**ENV, "RT_MARK": "z"}) as group:
        parents = {psutil.Process(p.pid).ppid() for p in group}
        assert len(parents) == 1
        zygote = psutil.Process(parents.pop())
        assert is_zygote(zygote) and zygote.ppid() == os.getpid()
        for p in group:
            got = info(p.base_url)
            assert got["pid"] == p.pid and got["mark"] == "z"  # the environment asked for
            assert os.getpgid(p.pid) == p.pid  # its own group: stop() ends what it started
            assert is_forked_server(psutil.Process(p.pid))  # not a fresh interpreter
        pids = [p.pid for p in group]
    assert all(exited(pid) for pid in pids)
    assert zygote.is_running()  # kept for the next start


def test_a_module_written_after_the_zygote_started_is_served(tmp_path: Path) -> None:
    with LocalProcessProvider("rt_apps:app", env=ENV):  # the zygote is up now
        pass
    (tmp_path / "late_app.py").write_text("from rt_apps import app\n")
    with LocalProcessProvider("late_app:app", env=with_pythonpath(HERE, tmp_path)) as p:
        assert info(p.base_url)["pid"] == p.pid
        assert is_forked_server(psutil.Process(p.pid))  # no fresh interpreter


def test_an_app_a_forked_copy_cannot_import_runs_in_a_fresh_interpreter(tmp_path: Path) -> None:
    (tmp_path / "fresh_only_app.py").write_text(
        "import sys\n"
        "main = sys.modules['__main__'].__spec__\n"
        "if main is not None and main.name == 'openenv_train.runtime.zygote':\n"
        "    raise ImportError('not in a forked copy')\n"
        "from rt_apps import app\n"
    )
    with LocalProcessProvider("fresh_only_app:app", env=with_pythonpath(HERE, tmp_path)) as p:
        assert info(p.base_url)["pid"] == p.pid  # the same process, exec'd in place
        assert "openenv_train.runtime.launch" in psutil.Process(p.pid).cmdline()
        assert is_zygote(psutil.Process(p.pid).parent())


def test_forking_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENENV_TRAIN_FORK_SERVERS", "0")
    with LocalProcessProvider("rt_apps:app", env=ENV) as p:
        assert info(p.base_url)["ppid"] == os.getpid()  # a fresh interpreter, our own child
        assert "openenv_train.runtime.launch" in psutil.Process(p.pid).cmdline()


def test_a_server_that_exits_by_itself_reports_its_exit_code() -> None:
    p = LocalProcessProvider("rt_apps:app", env=ENV)
    p.start()
    try:
        proc = p._proc
        assert proc is not None
        os.kill(p.pid, 9)
        assert proc.wait(timeout=10) == -9 and not p.running
    finally:
        p.stop()


PROGRAM = """\
import os, sys, time

def main():
    print(sys.argv[0], sys.argv[1:], sys.path[0] == os.environ["WANT_PATH0"], os.getcwd())
    print("from stdin:", sys.stdin.read().strip(), "| env:", os.environ["Z_MARK"])
    print("to stderr", file=sys.stderr)
    print("session leader:", os.getsid(0) == os.getpid())
    return int(sys.argv[1])

def says_why():
    sys.exit("a message, as sys.exit('...') prints it")

def interrupted():
    raise KeyboardInterrupt
"""


@pytest.fixture
def program_zygote(tmp_path: Path):
    """A zygote that preloads nothing of ours but ``json``; the program's module is written after
    it started (a forked copy imports it as a fresh interpreter would)."""
    import subprocess

    from openenv_train.runtime.zygote import Zygote

    zygote = Zygote(subprocess.Popen, preload=("json",))
    assert zygote.wait_ready(60)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "zprog.py").write_text(PROGRAM)
    yield zygote, tmp_path
    zygote.close()


def _run(zygote, tmp_path: Path, function: str, *argv: str, stdin: bytes = b""):
    out, err, given = tmp_path / "out", tmp_path / "err", tmp_path / "in"
    given.write_bytes(stdin)
    fds = [os.open(given, os.O_RDONLY), os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
           os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)]  # fmt: skip
    path0 = str(tmp_path / "bin")
    env = {"PATH": os.environ["PATH"], "Z_MARK": "m", "WANT_PATH0": path0}
    try:
        forked = zygote.run(f"zprog:{function}", ["/x/bin/zprog", *argv], env, str(tmp_path),
                            fds, path0=path0)  # fmt: skip
    finally:
        for fd in fds:
            os.close(fd)
    code = forked.wait(timeout=30)
    return code, out.read_text(), err.read_text()


def test_a_console_script_forked_from_a_zygote_is_what_the_script_would_be(program_zygote) -> None:
    zygote, tmp_path = program_zygote
    code, out, err = _run(zygote, tmp_path, "main", "3", stdin=b"hello")
    assert code == 3, err
    assert out.splitlines() == [
        f"/x/bin/zprog ['3'] True {tmp_path}",  # argv, the script's folder first, the cwd
        "from stdin: hello | env: m",
        "session leader: True",
    ]
    assert err == "to stderr\n"


def test_a_forked_script_ends_as_an_interpreter_would(program_zygote) -> None:
    zygote, tmp_path = program_zygote
    code, _, err = _run(zygote, tmp_path, "says_why")
    assert code == 1 and err == "a message, as sys.exit('...') prints it\n"
    code, _, err = _run(zygote, tmp_path, "interrupted")
    assert code == -2 and "KeyboardInterrupt" in err  # killed by SIGINT, traceback printed
