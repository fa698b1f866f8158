"""Errors at start: every mistake a config names fails before any work, in one line naming the
key and the fix, and leaves no run folder behind."""

from __future__ import annotations

import importlib.util
import signal
from pathlib import Path

import pytest
from cli_runs import run_cli

from openenv_train.recipes.grpo_blackjack.config import parse_config as parse_blackjack
from openenv_train.recipes.grpo_text.config import parse_config as parse_text
from openenv_train.training.checks import normalize_report_to
from openenv_train.training.config import ConfigError


def test_report_to_as_a_string_is_a_list() -> None:
    assert parse_blackjack({"report_to": "none"}).report_to == []
    assert normalize_report_to("tensorboard") == ["tensorboard"]
    assert normalize_report_to(None) == [] and normalize_report_to(["none"]) == []
    with pytest.raises(ValueError, match="report_to: 3 is not a list"):
        normalize_report_to(3)


def test_an_unknown_reporter_names_the_known_ones() -> None:
    with pytest.raises(
        ConfigError, match=r"report_to: unknown backend 'tensorbord'.*'tensorboard'"
    ):
        parse_blackjack({"report_to": ["tensorbord"]})


@pytest.mark.parametrize(
    ("backend", "fix"),
    [("tensorboard", "pip install 'openenv-train[tensorboard]'"), ("wandb", "pip install wandb")],
)
def test_a_missing_reporter_package_names_the_install_command(
    backend: str, fix: str, monkeypatch
) -> None:
    real = importlib.util.find_spec
    if real(backend) is not None:  # installed here: hide it (a stand-in for a machine without it)
        from openenv_train.training import checks

        hidden = {"tensorboard", "tensorboardX", backend}
        monkeypatch.setattr(
            checks.importlib.util, "find_spec", lambda n: None if n in hidden else real(n)
        )
    with pytest.raises(ConfigError) as err:
        parse_blackjack({"report_to": backend})  # a string: read as [backend]
    assert f"report_to: {backend!r} needs the {backend} package" in str(err.value)
    assert fix in str(err.value)


@pytest.mark.parametrize(
    ("app", "said"),
    [
        ("blackjak_env.server.app:app", "env.app: no module named 'blackjak_env'"),
        ("blackjack_env.server.app:ap", "env.app: module 'blackjack_env.server.app' has no attribute 'ap'"),
        ("blackjack_env.server.app", "env.app: 'blackjack_env.server.app' is not 'module:attribute'"),
    ],
)  # fmt: skip
def test_a_misspelled_env_app_is_named(app: str, said: str) -> None:
    with pytest.raises(ConfigError, match="^" + said.replace("(", r"\(").replace(")", r"\)")):
        parse_blackjack({"env": {"app": app}})
    with pytest.raises(ConfigError, match="^" + said):
        parse_text({"env": {"app": app}})


def test_docker_runtime_does_not_import_the_app_here() -> None:
    cfg = parse_blackjack({"env": {"app": "only_in_image:app", "runtime": "docker", "image": "x"}})
    assert cfg.env.app == "only_in_image:app"


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"spec": "openenv_train.recipes.grpo_text.countdown:Nope"}, "env.spec: module 'openenv_train.recipes.grpo_text.countdown' has no attribute 'Nope'"),
        ({"spec": "openenv_train.recipes.grpo_text.countdown:board"}, "env.spec: 'openenv_train.recipes.grpo_text.countdown:board' is not a TextEnvSpec subclass"),
        ({"spec": "no_such_env.spec:Spec"}, "env.spec: no module named 'no_such_env'"),
        ({"spec_kwargs": {"colour": 1}}, "env.spec_kwargs: CountdownSpec(...) failed"),
    ],
)  # fmt: skip
def test_a_wrong_env_spec_is_named(env: dict, said: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_text({"env": env})
    assert str(err.value).startswith(said)


def test_the_tiny_model_needs_words_and_the_warmup_needs_games(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "wordless.py").write_text(
        "from openenv_train.recipes.grpo_text.countdown import CountdownSpec\n"
        "class Wordless(CountdownSpec):\n    vocabulary = ()\n"
        "class Gameless(CountdownSpec):\n    random_episode = None\n"
    )
    monkeypatch.chdir(tmp_path)  # imported from the working directory, as uvicorn does
    with pytest.raises(
        ConfigError, match="^model.vocabulary: the tiny model needs the env's words"
    ):
        parse_text({"env": {"spec": "wordless:Wordless"}})
    words = ["total", "target", "add", *map(str, range(13))]  # every word of countdown's games
    cfg = parse_text({"env": {"spec": "wordless:Wordless"}, "model": {"vocabulary": words}})
    assert cfg.vocabulary() == words
    with pytest.raises(ConfigError, match="^model.warmup_steps: Gameless has no random_episode"):
        parse_text({"env": {"spec": "wordless:Gameless"}})
    assert parse_text({"env": {"spec": "wordless:Gameless"}, "model": {"warmup_steps": 0}})


def test_servers_are_reached_at_start_not_at_load(tmp_path: Path) -> None:
    """The config schema does no I/O: a ``base_urls`` server that does not answer loads fine and
    fails when the run starts (``open_run``), before the run folder exists."""
    from openenv_train.runtime.ports import free_port
    from openenv_train.training.lifecycle import open_run

    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    cfg = parse_blackjack({"output_dir": str(tmp_path / "runs"), "env": {"base_urls": [url]}})
    assert cfg.env.base_urls == [url]
    with pytest.raises(ConfigError, match=f"^env.base_urls: {url} does not answer"):
        with open_run(cfg):
            pass
    assert not (tmp_path / "runs").exists()
    countdown = {
        "app": "openenv_train.recipes.grpo_text.countdown:app",
        "spec": "openenv_train.recipes.grpo_text.countdown:CountdownSpec",
    }
    members = [{"name": "a", "base_urls": [url], **countdown}, {"name": "b", **countdown}]
    mixture = parse_text({"env": {"mixture": members}})  # a member's servers: not reached yet
    from openenv_train.training.checks import start_checks

    with pytest.raises(ConfigError, match="does not answer"):
        start_checks(mixture)


def test_a_failed_start_prints_one_line_and_leaves_no_run_folder(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console script in a subprocess for one mistake (its exit status, its stderr whole);
    the same ``main`` in this process for the other (a process start is the same each time)."""
    from openenv_train.cli.main import main

    def bad_config(body: str) -> Path:
        cfg = tmp_path / "bad.yaml"
        cfg.write_text(
            f"recipe: grpo_blackjack\nname: bad\noutput_dir: {tmp_path / 'runs'}\n{body}"
        )
        return cfg

    proc = run_cli(["train", str(bad_config("report_to: tensorbord\n"))], cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "report_to: unknown backend 'tensorbord'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "runs").exists()

    cfg = bad_config("env: {app: 'blackjak_env.server.app:app'}\n")
    monkeypatch.chdir(tmp_path)  # where the console script ran
    stop_handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    capfd.readouterr()
    try:
        code = main(["train", str(cfg)])  # an exception escaping it fails the test
    finally:
        for sig, handler in stop_handlers.items():  # main() makes them raise KeyboardInterrupt
            signal.signal(sig, handler)
    err = capfd.readouterr().err  # file descriptor 2: logging handlers' writes too
    assert code == 2, err[-2000:]
    assert "env.app: no module named 'blackjak_env'" in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()


def test_a_start_that_fails_after_the_checks_removes_its_run_folder(tmp_path: Path) -> None:
    from openenv_train.core.errors import ServerStartError
    from openenv_train.recipes.grpo_text.train import run

    cfg = parse_text(
        {
            "output_dir": str(tmp_path / "runs"),
            "env": {"startup_timeout_s": 0.001},  # the server cannot come up in time
            "model": {"warmup_steps": 0},
        }
    )
    with pytest.raises(ServerStartError):
        run(cfg)
    assert not cfg.run_dir.exists()


def test_python_m_train_says_how_to_call_it_and_exits_130_after_ctrl_c(capsys) -> None:
    from openenv_train.training.lifecycle import main

    def interrupted(cfg: object) -> None:
        raise KeyboardInterrupt

    assert main(interrupted, lambda path: path, []) == 2
    assert "usage: python -m" in capsys.readouterr().out
    assert main(interrupted, lambda path: path, ["x.yaml"]) == 130
