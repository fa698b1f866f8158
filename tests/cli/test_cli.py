"""``openenv-train`` as users run it: a process of its own (tests/support/cli_runs.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from cli_runs import ROOT, cli, run_cli
from ports import free_port


def test_train_tiny_config_end_to_end(tmp_path: Path) -> None:
    # the path, not learning: a warm-up step or two and a few eval hands write every record
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(
        f"""
recipe: grpo_blackjack
name: cli_tiny
output_dir: {tmp_path / "runs"}
model: {{warmup_steps: 2, warmup_batch_size: 16}}
env: {{num_servers: 1}}
grpo: {{max_steps: 2, per_device_train_batch_size: 16, num_generations: 4, logging_steps: 1}}
eval: {{hands: 20, every: 1, periodic_hands: 20}}
"""
    )
    proc = run_cli(
        ["train", str(cfg)], cwd=tmp_path
    )  # from elsewhere: the recipe is found via the config
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "after 2 GRPO steps" in proc.stdout and "basic strategy" in proc.stdout
    run = tmp_path / "runs" / "cli_tiny"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["episodes"] == 32
    assert [p["step"] for p in summary["curve"]] == [0, 1, 2]
    kinds = {json.loads(line)["kind"] for line in (run / "metrics.jsonl").read_text().splitlines()}
    assert {"warmup", "eval_before", "train", "eval", "eval_after"} <= kinds
    assert (run / "curve.png").read_bytes()[:4] == b"\x89PNG"
    assert (run / "model" / "config.json").is_file() and (
        run / "model" / "tokenizer.json"
    ).is_file()
    ev = run_cli(["eval", str(run / "model"), "--hands", "20"])
    assert ev.returncode == 0, ev.stderr[-2000:]
    assert "basic strategy" in ev.stdout


def test_train_bad_config_fails_fast_with_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(
        "recipe: grpo_blackjack\ngrpo: {per_device_train_batch_size: 30, num_generations: 16}\n"
    )
    proc = run_cli(["train", str(cfg)])
    assert proc.returncode == 2
    assert "grpo.num_generations=16" in proc.stderr and "Traceback" not in proc.stderr
    cfg.write_text("grpo: {max_steps: 2}\n")
    proc = run_cli(["train", str(cfg)])
    assert proc.returncode == 2 and "'recipe:' key" in proc.stderr
    proc = run_cli(["train", str(tmp_path / "nope.yaml")])
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    cfg.write_text("recipe: chess\n")
    proc = run_cli(["train", str(cfg)])
    assert proc.returncode == 2 and "no recipe named 'chess'" in proc.stderr
    assert "grpo_blackjack" in proc.stderr  # the registered ones are listed


def test_serve_runs_an_env_app_on_loopback() -> None:
    port = free_port()
    proc = subprocess.Popen(
        cli() + ["serve", "echo_env.server.app:app", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"server did not come up: {proc.stderr.read().decode()[-2000:]}")
                time.sleep(0.3)
        assert r.status_code == 200
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_serve_rejects_a_bad_app_path() -> None:
    proc = run_cli(["serve", "not_an_import_path"])
    assert proc.returncode == 2 and "package.module:attribute" in proc.stderr
