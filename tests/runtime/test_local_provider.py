"""LocalProcessProvider and start_local_servers with real subprocesses on loopback."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest
from ports import held_port
from processes import gone, is_zygote
from rt_info import ENV, info

from openenv_train.core import ServerStartError
from openenv_train.runtime import LocalProcessProvider, ServerGroup, start_local_servers


def test_start_serves_on_loopback_and_stop_ends_the_process() -> None:
    with LocalProcessProvider("rt_apps:app", env={**ENV, "RT_MARK": "m1"}) as p:
        assert p.base_url is not None and p.base_url.startswith("http://127.0.0.1:")
        got = info(p.base_url)
        assert got["mark"] == "m1" and got["pid"] == p.pid
        # forked from this process's zygote, which this process started
        assert psutil.Process(got["ppid"]).ppid() == os.getpid()
        pid = p.pid
        assert "serving rt_apps:app" in p.logs()
        assert p.log_path is not None and "serving rt_apps:app" in Path(p.log_path).read_text()
        assert os.readlink(f"/proc/{pid}/fd/1").endswith("(deleted)")  # no file to leak
    assert gone(pid)
    assert p.base_url is None and not p.running and p.log_path is None
    p.stop()  # idempotent


def test_a_crashing_app_reports_exit_code_and_log_lines() -> None:
    p = LocalProcessProvider("rt_broken_app:app", env=ENV, startup_timeout=60)
    with pytest.raises(ServerStartError) as exc:
        p.start()
    msg = str(exc.value)
    assert "exit code 1" in msg
    assert "database url missing (this line must reach the error message)" in msg
    assert "rt_broken_app: loading config" in msg
    assert not p.running


def test_a_server_that_never_gets_healthy_times_out_and_is_stopped() -> None:
    # long enough for the server to be up and answering 503 on a loaded machine (at 2 s it had
    # not yet listened once, in a run beside a fresh install's first imports)
    p = LocalProcessProvider("rt_apps:never_healthy", env=ENV, startup_timeout=6)
    with pytest.raises(ServerStartError, match="startup_timeout=6.0s.*HTTP 503") as exc:
        p.start()
    assert "serving rt_apps:never_healthy" in str(exc.value)
    assert not p.running


def test_a_busy_port_is_a_clear_error() -> None:
    with held_port(listen=True) as port:
        with pytest.raises(ServerStartError, match=f"127.0.0.1:{port}.*port=None"):
            LocalProcessProvider("rt_apps:app", env=ENV, port=port).start()


def test_bad_arguments_name_the_field() -> None:
    with pytest.raises(ValueError, match="app must be an ASGI import path"):
        LocalProcessProvider("rt_apps")
    with pytest.raises(ValueError, match="port"):
        LocalProcessProvider("rt_apps:app", port=70000)
    with pytest.raises(ValueError, match="startup_timeout"):
        LocalProcessProvider("rt_apps:app", startup_timeout=0)
    with pytest.raises(ValueError, match="n must be"):
        start_local_servers("rt_apps:app", 0)


def test_start_local_servers_in_parallel_and_stop_them_all() -> None:
    with start_local_servers("rt_apps:app", 3, env=ENV) as group:
        assert isinstance(group, ServerGroup) and len(group) == 3
        assert len(set(group.base_urls)) == 3
        pids = [info(url)["pid"] for url in group.base_urls]
        assert pids == [p.pid for p in group]
    assert all(gone(pid) for pid in pids)


def test_a_failing_server_in_a_group_stops_the_others() -> None:
    with pytest.raises(ServerStartError):
        with pytest.MonkeyPatch.context() as mp:
            made: list[LocalProcessProvider] = []
            real = LocalProcessProvider.__init__

            def init(self, app, **kw):  # the 2nd server gets a broken app
                real(self, "rt_broken_app:app" if len(made) == 1 else app, **kw)
                made.append(self)

            mp.setattr(LocalProcessProvider, "__init__", init)
            start_local_servers("rt_apps:app", 3, env=ENV)
    assert len(made) == 3 and all(not p.running for p in made)


def test_no_orphan_when_the_owner_is_killed_with_sigkill() -> None:
    owner_code = (
        "import sys, time\n"
        "from openenv_train.runtime import LocalProcessProvider\n"
        "p = LocalProcessProvider('rt_apps:app')\n"
        "p.start()\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", owner_code],
        stdout=subprocess.PIPE,
        env={**os.environ, **ENV},
        text=True,
    )
    try:
        line = owner.stdout.readline()  # type: ignore[union-attr]
        server_pid = int(line)
        assert psutil.pid_exists(server_pid)
        zygote = psutil.Process(psutil.Process(server_pid).ppid())
        assert zygote.ppid() == owner.pid and is_zygote(zygote)
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        assert gone(server_pid, within=10.0), "the server outlived its SIGKILLed owner"
        assert gone(zygote.pid, within=10.0), "the zygote outlived its SIGKILLed owner"

    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()


def test_server_started_from_a_short_lived_thread_survives_the_thread() -> None:
    """PR_SET_PDEATHSIG fires when the forking *thread* dies; starting from a thread must be safe."""
    box: dict[str, LocalProcessProvider] = {}
    t = threading.Thread(
        target=lambda: box.setdefault("p", LocalProcessProvider("rt_apps:app", env=ENV)).start()
    )
    t.start()
    t.join(60)
    p = box["p"]
    try:
        # the thread is gone: a death signal tied to it would end the server at once
        assert not gone(p.pid, within=0.5), "the server died with the thread that started it"
        assert p.running and info(p.base_url)["pid"] == p.pid  # type: ignore[arg-type]
    finally:
        p.stop()


def test_a_forgotten_provider_is_stopped_when_collected() -> None:
    p = LocalProcessProvider("rt_apps:app", env=ENV)
    p.start()
    pid = p.pid
    del p
    gc.collect()
    assert pid is not None and gone(pid)


def test_launcher_exits_if_its_parent_is_already_gone() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "openenv_train.runtime.launch", "--app", "rt_apps:app", "--port", "0",
         "--parent-pid", "1"],
        env={**os.environ, **ENV}, capture_output=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 70


def test_a_forked_copy_of_the_owner_does_not_stop_the_server() -> None:
    with LocalProcessProvider("rt_apps:app", env=ENV) as p:
        child = os.fork()
        if child == 0:  # the forked copy exits normally: atexit and finalizers run here
            try:
                p.stop()
                gc.collect()
            finally:
                os._exit(0)
        os.waitpid(child, 0)
        assert p.running and info(p.base_url)["pid"] == p.pid  # type: ignore[arg-type]
        assert "serving rt_apps:app" in p.logs()
