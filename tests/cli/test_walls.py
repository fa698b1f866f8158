"""The walls a new user hit (issue 21): each fails at start with one line naming the key and the
fix, exit status 2, and no run folder left behind."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import yaml

from openenv_train.cli.main import main
from openenv_train.cli.overrides import OverrideError, apply_overrides, check_resume_config
from openenv_train.recipes.grpo_text.config import load_config, parse_config
from openenv_train.training.lifecycle import resume_command

ROOT = Path(__file__).resolve().parents[2]
COUNTDOWN = ROOT / "configs" / "grpo_text_countdown.yaml"


def _config(tmp_path: Path, **changes: object) -> Path:
    data = yaml.safe_load(COUNTDOWN.read_text())
    data.update(output_dir=str(tmp_path / "runs"), **changes)
    path = tmp_path / "countdown.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def test_a_dead_env_server_is_named_at_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    cfg = _config(tmp_path, env={"base_urls": [url]})
    assert main(["train", str(cfg)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "env.base_urls" in err and url in err and "openenv-train serve" in err
    assert not (tmp_path / "runs").exists()


def test_a_misspelled_key_names_the_nearest_one() -> None:
    with pytest.raises(ValueError, match=r"did you mean `grpo\.learning_rate`\?"):
        parse_config({"name": "x", "grpo": {"learnig_rate": 1e-3}})
    with pytest.raises(ValueError, match=r"did you mean `grpo\.max_steps`\?"):
        parse_config({"name": "x", "max_step": 3})


def test_set_overrides_go_through_the_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = apply_overrides(
        {"grpo": {"max_steps": 5}}, ["grpo.learning_rate=1e-4", "eval.keep_best=false", "x.y=[1]"]
    )
    assert data == {
        "grpo": {"max_steps": 5, "learning_rate": 1e-4},
        "eval": {"keep_best": False},
        "x": {"y": [1]},
    }
    with pytest.raises(OverrideError, match="KEY=VALUE"):
        apply_overrides({}, ["grpo.learning_rate"])
    cfg = _config(tmp_path)
    assert main(["train", str(cfg), "--set", "grpo.learnig_rate=1e-4"]) == 2
    assert "did you mean `grpo.learning_rate`?" in capsys.readouterr().err
    assert main(["train", str(cfg), "--set", "grpo.num_generations=1"]) == 2
    assert "grpo.num_generations=1" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_resume_refuses_a_changed_config_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path)
    cfg = load_config(path)
    run = tmp_path / "runs" / cfg.name
    (run / "trainer" / "checkpoint-2").mkdir(parents=True)
    (run / "config.json").write_text(cfg.model_dump_json())

    assert main(["train", str(path), "--resume", "--set", "grpo.learning_rate=0.1"]) == 2
    err = capsys.readouterr().err
    assert f"grpo.learning_rate: {cfg.grpo.learning_rate!r} -> 0.1" in err
    assert "--force-resume" in err and "max_steps" not in err

    longer = cfg.model_copy(deep=True)
    longer.grpo.max_steps += 10  # going on longer is what a resume is for
    longer.resume = True
    check_resume_config(longer)
    changed = cfg.model_copy(deep=True)
    changed.seed = 7
    with pytest.raises(OverrideError, match="seed: 0 -> 7"):
        check_resume_config(changed)
    check_resume_config(changed, force=True)


def test_the_resume_hint_names_the_config_it_was_given(tmp_path: Path) -> None:
    cfg = load_config(_config(tmp_path))
    assert cfg.source == str(tmp_path / "countdown.yaml")
    run = tmp_path / "runs" / "x"
    assert resume_command(run, cfg.source) == (f"openenv-train train {cfg.source} --resume {run}")
    assert "CONFIG" not in resume_command(run)  # no source: the run folder's own config.json
    assert resume_command(run).startswith(f"openenv-train train {run / 'config.json'} ")


def test_a_missing_vocabulary_word_is_named() -> None:
    with pytest.raises(ValueError, match=r"model\.vocabulary: .*'target'.*'7'") as err:
        parse_config({"name": "x", "model": {"vocabulary": ["total", "add", "0", "1", "2", "3"]}})
    assert "'total'" not in str(err.value) and "'add'" not in str(err.value)
    with pytest.raises(ValueError, match=r"model\.vocabulary: .*'Answer'"):
        parse_config(
            {
                "name": "x",
                "model": {"vocabulary": ["total", "target", "add", *map(str, range(13))]},
                "rollout": {"system_prompt": "Answer 1"},
            }
        )


def _run(folder: Path, curve: list[dict[str, float]], **summary: object) -> Path:
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({"curve": curve, **summary}))
    return folder


def test_curve_plots_a_text_env_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    points = [
        {"step": 0, "mean_reward": -0.4, "win_rate": 0.3, "wall_s": 6.0},
        {"step": 20, "mean_reward": 1.0, "win_rate": 1.0, "wall_s": 60.0},
    ]
    a = _run(tmp_path / "a", points)  # a run written before summary.json named its panels
    b = _run(tmp_path / "b", points, panels=[["mean_reward", "mean reward"]])
    png = tmp_path / "compare.png"
    assert main(["curve", str(a), str(b), "--out", str(png)]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out and "mean reward 1" in out and "share of games won 1" in out
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_curve_without_a_score_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _run(tmp_path / "a", [{"step": 0, "something": 1.0}])
    b = _run(tmp_path / "b", [{"step": 0, "something": 2.0}])
    png = tmp_path / "compare.png"
    assert main(["curve", str(a), str(b), "--out", str(png)]) == 2
    assert "no score to plot" in capsys.readouterr().err
    assert not png.exists()


def test_the_unknown_key_hint_names_the_installed_example() -> None:
    """``configs/...yaml`` exists only in a clone; the hint names what works after a pip install
    (issue 36)."""
    with pytest.raises(ValueError, match=r"did you mean `grpo\.learning_rate`\?") as err:
        parse_config({"name": "x", "grpo": {"learnig_rate": 1e-3}})
    text = str(err.value)
    assert "configs/" not in text, text
    assert "`openenv-train configs grpo_text_countdown` prints the example" in text
