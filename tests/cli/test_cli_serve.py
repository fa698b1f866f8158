"""``openenv-train serve my_env:app`` from the folder that holds ``my_env.py``, as with uvicorn."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from cli_runs import cli, cli_env, read_until, run_cli, start_cli, stop

pytestmark = pytest.mark.timeout(180)

MY_ENV = """
from openenv_train.core import Action, Observation
from openenv_train.server import Environment, create_app

GREETING = "hello"


class SayAction(Action):
    text: str


class SayObservation(Observation):
    reply: str = ""


class SayEnv(Environment):
    def reset(self, seed=None, episode_id=None, **kwargs):
        return SayObservation(reply=GREETING)

    def step(self, action):
        return SayObservation(reply=action.text, done=True, reward=1.0)


app = create_app(SayEnv, SayAction, SayObservation)
"""


def write_env(folder: Path) -> Path:
    path = folder / "my_env.py"
    path.write_text(MY_ENV)
    return path


def served_url(lines: list[str]) -> str:
    found = re.search(r"serving my_env:app at (http://127\.0\.0\.1:\d+)", "\n".join(lines))
    assert found, lines
    return found.group(1)


def greeting(url: str) -> str | None:
    try:
        return httpx.post(url + "/reset", json={}, timeout=5).json()["observation"]["reply"]
    except httpx.TransportError:
        return None


def test_serve_imports_my_env_from_the_current_folder(tmp_path: Path) -> None:
    write_env(tmp_path)
    proc = start_cli(
        ["serve", "my_env:app", "--port", "0"], tmp_path, cli_env(PYTHONUNBUFFERED="1")
    )
    try:
        lines = read_until(proc, "Ctrl-C stops")
        url = served_url(lines)
        banner = "\n".join(lines)
        for shown in (
            f"{url}/health",
            f"{url}/docs",
            f"{url}/mcp",
            url.replace("http", "ws") + "/ws",
        ):
            assert shown in banner, banner
        deadline = time.monotonic() + 60
        while greeting(url) is None and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.2)
        assert httpx.get(url + "/health").json()["status"] == "healthy"
        assert greeting(url) == "hello"
    finally:
        assert stop(proc) == 0


def test_serve_reload_picks_up_an_edit(tmp_path: Path) -> None:
    path = write_env(tmp_path)
    proc = start_cli(
        ["serve", "my_env:app", "--port", "0", "--reload"], tmp_path, cli_env(PYTHONUNBUFFERED="1")
    )
    try:
        lines = read_until(proc, "Ctrl-C stops")
        assert f"reloading when a .py file under {tmp_path.resolve()} changes" in "\n".join(lines)
        url = served_url(lines)
        deadline = time.monotonic() + 60
        while greeting(url) != "hello":
            assert time.monotonic() < deadline and proc.poll() is None, "server did not start"
            time.sleep(0.2)
        edited = path.read_text().replace('GREETING = "hello"', 'GREETING = "bonjour"')
        assert "bonjour" in edited
        path.write_text(edited)
        deadline = time.monotonic() + 60
        while greeting(url) != "bonjour":
            assert time.monotonic() < deadline and proc.poll() is None, "no reload after the edit"
            time.sleep(0.3)
    finally:
        stop(proc)


def test_serve_names_a_module_it_cannot_find(tmp_path: Path) -> None:
    proc = run_cli(["serve", "not_here:app"], tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "no module 'not_here'" in proc.stderr and "--app-dir" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_python_dash_m_is_the_same_command() -> None:
    by_module = subprocess.run(
        [sys.executable, "-m", "openenv_train", "--version"], capture_output=True, text=True
    )
    by_script = subprocess.run(cli() + ["--version"], capture_output=True, text=True)
    assert by_module.returncode == by_script.returncode == 0
    assert by_module.stdout == by_script.stdout
    assert re.fullmatch(r"openenv-train \d+\.\d+\.\d+\S*\n", by_module.stdout), by_module.stdout


def test_reload_is_refused_where_it_cannot_work(capsys: pytest.CaptureFixture[str]) -> None:
    from openenv_train.cli.main import main

    assert main(["serve", "my_env:app", "--runtime", "docker", "--reload"]) == 2
    assert "--reload restarts a local server" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("target", "named"),
    [
        ("hilo_walls.server.ap:app", "no module 'hilo_walls.server.ap'"),
        ("hilo_walls.server.app:ap", "has no attribute 'ap'"),
        ("hilo_walls.broken:app", "ZeroDivisionError"),
    ],
)
def test_serve_names_what_is_wrong_before_any_banner(
    tmp_path: Path, target: str, named: str
) -> None:
    """The app loads before ``serving ... at URL`` is printed: a typo in the module or the
    attribute, or a module that raises, is one line of ours, exit 2 (issue 36)."""
    package = tmp_path / "hilo_walls"
    (package / "server").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "server" / "__init__.py").write_text("")
    write_env(package / "server").rename(package / "server" / "app.py")
    (package / "broken.py").write_text("x = 1 / 0\n")
    proc = run_cli(["serve", target, "--port", "0"], tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "serving" not in proc.stdout and "playground" not in proc.stdout, proc.stdout
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and named in err and "Traceback" not in err, err
