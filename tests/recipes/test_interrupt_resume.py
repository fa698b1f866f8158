"""Ctrl-C keeps the work and ``--resume`` continues it: a real ``openenv-train train`` in a
subprocess gets SIGINT after its first periodic eval, then the same config resumes."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from cli_runs import run_cli, start_cli


def _rows(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_ctrl_c_saves_the_work_and_resume_continues_the_steps(tmp_path: Path) -> None:
    cfg = tmp_path / "countdown.yaml"
    cfg.write_text(
        f"""
recipe: grpo_text
name: stopped
output_dir: {tmp_path / "runs"}
model: {{warmup_steps: 10, warmup_batch_size: 16}}
rollout: {{max_turns: 10, max_new_tokens: 2}}
grpo: {{max_steps: 10000, per_device_train_batch_size: 16, logging_steps: 1}}
eval: {{every: 2, episodes: 8, periodic_episodes: 8}}
"""
    )
    run = tmp_path / "runs" / "stopped"
    proc = start_cli(["train", str(cfg)], cwd=tmp_path, merge_stderr=False)
    try:
        deadline = time.monotonic() + 240
        while not any(r["kind"] == "eval" and r["step"] > 0 for r in _rows(run)):
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "no periodic eval within 240 s"
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "finishing this step" in out + err
    summary = json.loads((run / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["after"] is None
    stopped_at = max(r["step"] for r in _rows(run) if r["kind"] == "train")
    assert 2 <= stopped_at < 10000
    assert (run / "trainer" / f"checkpoint-{stopped_at}" / "optimizer.pt").is_file()
    assert (run / "model" / "config.json").is_file() and (run / "curve.png").is_file()
    assert (run / "best" / "best.json").is_file()  # checkpointed when it improved
    assert f"--resume {run}`" in " ".join(out.split())

    done = run_cli(
        ["train", str(cfg), "--resume", "--max-steps", str(stopped_at + 2)], cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = _rows(run)
    assert [r["kind"] for r in rows].count("eval_before") == 1  # appended, not restarted
    steps = [r["step"] for r in rows if r["kind"] == "train" and "reward" in r]
    assert steps == sorted(steps) and steps[-1] == stopped_at + 2  # the counter went on
    assert stopped_at + 1 in steps
    summary = json.loads((run / "summary.json").read_text())
    assert summary["interrupted"] is False and summary["curve"][0]["step"] == 0
    # each periodic eval, before and after the resume, left its sample for `openenv-train view`
    samples = sorted(p.name for p in (run / "trajectories").glob("step_*.jsonl"))
    assert samples[0] == "step_000000.jsonl" and int(samples[-1][5:11]) > stopped_at
    episode = json.loads((run / "trajectories" / samples[-1]).read_text().splitlines()[0])
    assert episode["reward"] is not None and episode["turns"][1]["role"] == "model"

    missing = run_cli(["train", str(cfg), "--resume", str(tmp_path / "runs" / "other")], tmp_path)
    assert missing.returncode == 2 and "has no checkpoint to continue from" in missing.stderr
