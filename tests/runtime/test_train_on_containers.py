"""``openenv-train train`` with ``env.runtime: docker``: trains on hardened containers and removes
them at the end, on Ctrl-C and on a crash (checked by the owner's label after it exits)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest
from cli_runs import CliProcess, start_cli
from rt_containers import ROOT, engine_client

from openenv_train.runtime import container_engine as ce

pytestmark = pytest.mark.usefixtures("no_leaks")


def config(tmp_path: Path, image: str, grpo_extra: str = "", servers: int = 1) -> Path:
    cfg = tmp_path / "tiny_docker.yaml"
    cfg.write_text(
        f"""
recipe: grpo_blackjack
name: docker_tiny
output_dir: {tmp_path / "runs"}
progress: false
model: {{warmup_steps: 10, warmup_batch_size: 16}}
env: {{num_servers: {servers}, runtime: docker, image: "{image}"}}
grpo: {{max_steps: 1, per_device_train_batch_size: 8, num_generations: 4, logging_steps: 1{grpo_extra}}}
eval: {{hands: 50, every: 1, periodic_hands: 20}}
"""
    )
    return cfg


def train(cfg: Path) -> CliProcess:
    return start_cli(["train", str(cfg)], ROOT, merge_stderr=False)


def left_by(pid: int) -> list[str]:
    client = engine_client("docker")
    listing = client.api.containers(all=True, filters={"label": [f"{ce.LABEL_OWNER_PID}={pid}"]})
    return ce.names_in_listing(listing)


def test_train_on_docker_containers_and_remove_them_at_the_end(tmp_path, image_of):
    """Two containers: each requires a token of its own, which the rollouts and evals use."""
    proc = train(config(tmp_path, image_of("docker", "blackjack_env"), servers=2))
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    assert "started 2 docker env server(s)" in out and "after 1 GRPO steps" in out
    assert left_by(proc.pid) == []


def test_ctrl_c_during_training_removes_the_containers(tmp_path, image_of):
    proc = train(config(tmp_path, image_of("docker", "blackjack_env")))
    try:
        for line in proc.stdout:
            if "docker env server(s)" in line:
                break
        assert left_by(proc.pid), "the run should own a container now"
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    finally:
        proc.kill()
    assert left_by(proc.pid) == []


def test_a_crash_after_the_servers_started_removes_them(tmp_path, image_of):
    cfg = config(tmp_path, image_of("docker", "blackjack_env"), ", extra: {no_such_field: 1}")
    proc = train(cfg)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode != 0 and "no_such_field" in err
    assert "docker env server(s)" in out
    assert left_by(proc.pid) == []


def test_config_names_the_missing_image(tmp_path):
    sys.path.insert(0, str(ROOT))
    from openenv_train.recipes.grpo_blackjack.config import load_config

    cfg = tmp_path / "c.yaml"
    cfg.write_text("recipe: grpo_blackjack\nenv: {runtime: podman}\n")
    with pytest.raises(ValueError, match="env.image"):
        load_config(cfg)
