"""Ctrl-C on ``openenv-train train`` of the forge recipe: quiet, prompt, the work saved, no
process left; ``--resume`` continues from the checkpoint it saved.

Monarch's shutdown has printed SIGTERM backtraces for forge users; ours must not. The signal goes
to the whole process group, as a terminal's Ctrl-C does (Monarch's processes and the env servers
run in their own groups and are stopped by the app).
"""

from __future__ import annotations

import json
import os
import signal

import psutil
import pytest
import yaml
from cli_runs import ROOT, run_cli, start_cli
from proc_checks import alive
from server_helpers import wait_until

from openenv_train.recipes.forge_grpo_blackjack.config import parse_config
from openenv_train.training.config import ConfigError


@pytest.mark.timeout(600)
def test_ctrl_c_saves_stops_everything_quietly_and_resume_continues(tmp_path) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "recipe": "forge_grpo_blackjack",
                "name": "ctrl_c",
                "output_dir": str(tmp_path / "runs"),
                "steps": 10_000,  # far more than the test waits for
                "group_size": 4,
                "local_batch_size": 16,
                "progress": False,
                "model": {"warmup_steps": 5},
                "env": {"num_servers": 1},
                "rollout": {"groups_per_rollout": 4},
                "eval": {"hands": 100, "every": 1000, "periodic_hands": 100},
            }
        )
    )
    proc = start_cli(["train", str(config)], ROOT)  # its own group: a terminal's foreground job
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if "actor graph up" in line:
            break
    else:
        pytest.fail("the app never came up:\n" + "".join(lines))
    metrics = tmp_path / "runs" / "ctrl_c" / "metrics.jsonl"

    def trained() -> bool:  # the first step is logged: training steps are running now
        assert proc.poll() is None, "the run ended before a training step"
        return metrics.exists() and '"kind": "train"' in metrics.read_text()

    wait_until(trained, 180, "the first training step in metrics.jsonl")
    children = {c.pid for c in psutil.Process(proc.pid).children(recursive=True)}
    assert len(children) >= 5, "expected 4 actor processes and an env server"
    os.killpg(proc.pid, signal.SIGINT)
    rest, _ = proc.communicate(timeout=120)
    output = "".join(lines) + rest
    assert proc.returncode == 130, output
    assert "Traceback" not in output and "SIGTERM" not in output, output
    assert "interrupted" in rest
    assert not alive(children | {proc.pid}), "processes outlived Ctrl-C"  # a bounded wait
    run_dir = tmp_path / "runs" / "ctrl_c"
    first = json.loads((run_dir / "summary.json").read_text())
    assert first["interrupted"] and first["steps"] >= 1 and first["episodes"] > 0
    assert first["checkpoint"] == str(run_dir / "trainer" / f"checkpoint-{first['steps']}")
    assert (run_dir / "model" / "config.json").is_file() and (run_dir / "curve.png").is_file()

    target = first["steps"] + 2
    done = run_cli(["train", str(config), "--resume", "--max-steps", str(target)], timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    second = json.loads((run_dir / "summary.json").read_text())
    assert second["steps"] == target and second["resumed"] and not second["interrupted"]
    assert second["episodes"] > first["episodes"]  # the counts go on from the checkpoint
    assert second["before"] == first["before"]  # the eval before, taken back from metrics.jsonl
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in rows].count("eval_before") == 1  # appended, not started afresh
    assert rows[-1]["kind"] == "eval_after" and rows[-1]["step"] == target


def test_config_errors_name_the_key() -> None:
    with pytest.raises(ConfigError, match="local_batch_size=30 is not a multiple of group_size=16"):
        parse_config({"local_batch_size": 30})
    with pytest.raises(ConfigError, match="services.generator"):
        parse_config({"services": {"generator": {"num_replicas": 2}}})
    with pytest.raises(ConfigError, match="off_by_m: unknown key"):
        parse_config({"off_by_m": 1})


def test_shipped_configs_load() -> None:
    cpu = parse_config(yaml.safe_load((ROOT / "configs/forge_grpo_blackjack_cpu.yaml").read_text()))
    assert cpu.backend == "monarch" and cpu.off_by_n == 1
    gpu = parse_config(yaml.safe_load((ROOT / "configs/forge_grpo_blackjack_gpu.yaml").read_text()))
    assert gpu.backend == "forge" and gpu.services.generator.with_gpus


def test_resume_needs_a_saved_checkpoint(tmp_path) -> None:
    from openenv_train.cli.main import main

    config = tmp_path / "c.yaml"
    config.write_text(f"recipe: forge_grpo_blackjack\noutput_dir: {tmp_path}\nname: none\n")
    assert main(["train", str(config), "--resume"]) == 2
    assert not (tmp_path / "none").exists()


def test_cli_train_selects_the_forge_recipe_and_max_steps(monkeypatch, tmp_path) -> None:
    import openenv_train.recipes.forge_grpo_blackjack.train as train
    from openenv_train.cli.main import main

    seen = []
    monkeypatch.setattr(train, "run", seen.append)
    config = tmp_path / "c.yaml"
    config.write_text("recipe: forge_grpo_blackjack\nsteps: 100\n")
    assert main(["train", str(config), "--max-steps", "7", "--name", "x"]) == 0
    assert seen[0].steps == 7 and seen[0].name == "x" and seen[0].backend == "monarch"
    assert not seen[0].resume
