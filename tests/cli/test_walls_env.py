"""The env-side walls a new user hit (issue 21): ``init``'s next steps, ``build`` on a machine
without a registry, a missing image, ``eval`` from another folder, a hub model offline: one line
each that names the fix, exit status 2, no traceback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from cli_runs import run_cli

from openenv_train.cli.env_build import LOCAL_BASE_IMAGE, local_base_image
from openenv_train.recipes.grpo_text.config import parse_config

ROOT = Path(__file__).resolve().parents[2]


def test_init_next_steps_work_after_the_cd_they_suggest(tmp_path: Path) -> None:
    proc = run_cli(["init", "nim", "--dir", "games"], tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stderr.split())
    assert "cd games/nim && python -m pytest tests" in text
    assert "openenv-train serve .;" in text and "openenv-train build ." in text
    assert "serve games/nim" not in text  # wrong once inside games/nim


def test_a_missing_image_names_the_envs_own_folder() -> None:
    with pytest.raises(ValueError, match=r"--tag openenv-train/openenv_train:latest`") as err:
        parse_config(
            {"name": "x", "env": {"runtime": "docker"}}
        )  # app: openenv_train.recipes.grpo_text...
    assert "blackjack" not in str(err.value)


@pytest.mark.skipif(local_base_image() is None, reason=f"needs {LOCAL_BASE_IMAGE} (make engines)")
def test_a_missing_image_at_train_is_one_line(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "configs" / "grpo_text_countdown.yaml").read_text())
    data["env"] = {"runtime": "docker", "image": "openenv-train-test/no_such_env:none"}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(data))
    proc = run_cli(["train", "c.yaml"], tmp_path, timeout=300)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert "no_such_env" in proc.stderr and "openenv-train build" in proc.stderr
    assert not (tmp_path / "runs" / data["name"]).exists()


@pytest.mark.skipif(local_base_image() is None, reason=f"needs {LOCAL_BASE_IMAGE} (make engines)")
def test_build_without_base_image_uses_the_local_one(tmp_path: Path) -> None:
    from openenv_train.cli.main import main

    # the scaffold in-process (init's own output is checked above); the build through the CLI
    assert main(["init", "walls_base", "--dir", str(tmp_path)]) == 0
    tag = "openenv-train-test/walls_base:latest"
    proc = run_cli(["build", str(tmp_path / "walls_base"), "--tag", tag], tmp_path)
    try:
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert f"built {tag}" in proc.stdout
        # here the registry may answer or not: either the default base built, or the hint was used
        assert "Traceback" not in proc.stderr
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, check=False)


def test_eval_from_another_folder_is_one_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "project" / "runs" / "nim"
    (run_dir / "model").mkdir(parents=True)
    (run_dir / "model" / "config.json").write_text("{}")
    data = {"recipe": "grpo_text", "name": "nim"}
    data["env"] = {"app": "nim_walls.server.app:app", "spec": "nim_walls.text_spec:NimSpec"}
    (run_dir / "config.json").write_text(json.dumps(data))
    proc = run_cli(["eval", str(run_dir / "model")], tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "nim_walls" in proc.stderr
    assert "from the folder you trained in" in proc.stderr


def test_a_hub_model_offline_fails_at_once(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "configs" / "grpo_text_countdown.yaml").read_text())
    data["model"] = {"path": "walls-test/not-cached-model", "hub": True}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(data))
    proc = run_cli(["train", "c.yaml"], tmp_path, timeout=120, HF_HUB_OFFLINE="1")
    assert proc.returncode == 2, proc.stderr[-3000:]
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "model.path" in err and "huggingface-cli download walls-test/not-cached-model" in err
    assert not (tmp_path / "runs" / data["name"]).exists()  # the started run folder is removed


def test_validate_names_the_missing_module_or_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo in an app path or a folder that is not there: the missing module or folder, never
    "the container runtime needs the docker SDK" (issue 36)."""
    from openenv_train.cli.main import main

    (tmp_path / "hilo_walls" / "server").mkdir(parents=True)
    (tmp_path / "hilo_walls" / "__init__.py").write_text("")
    (tmp_path / "hilo_walls" / "server" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    for target, named in (
        ("hilo_walls.server.ap:app", "no module 'hilo_walls.server.ap'"),
        ("./nothere", "no folder './nothere'"),
    ):
        assert main(["validate", target]) == 2
        err = capsys.readouterr().err
        assert named in err and "docker" not in err, err


def test_init_says_how_to_get_pytest_where_it_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A user's venv has no pytest: the suggested next step installs it first (issue 36)."""
    import importlib.util

    from openenv_train.cli.main import main

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pytest" else real(name, *a)
    )
    assert main(["init", "nim", "--dir", str(tmp_path)]) == 0
    text = " ".join(capsys.readouterr().err.split())
    assert f"cd {tmp_path / 'nim'} && pip install pytest && python -m pytest tests" in text
    assert "openenv-train validate ." in text
    assert 'test = ["pytest>=8"]' in (tmp_path / "nim" / "pyproject.toml").read_text()
