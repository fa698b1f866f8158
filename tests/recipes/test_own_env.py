"""The docs' "Train GRPO on your own env" (docs/tutorials/own-env.md), followed as written: scaffold an env with
``openenv-train init``, change its reward, save the page's spec and config, train a few steps
with ``openenv-train train`` (stdout a pipe: plain progress lines), and find the curve and the
env's rewards in the run folder."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from cli_runs import ROOT, run_cli

SCAFFOLD_REWARD = "reward=float(self._total)"
GAME_REWARD = "reward=(1.0 if self._total == self._target else -1.0) if done else 0.0"


def _section() -> str:
    text = (ROOT / "docs" / "tutorials" / "own-env.md").read_text()
    start = text.index("## Train GRPO on your own env")
    end = text.find("\n## ", start + 10)
    return text[start : end if end > 0 else len(text)]


def test_the_readme_walkthrough_trains_on_a_scaffolded_env(tmp_path: Path) -> None:
    section = _section()
    assert "openenv-train init countdown && cd countdown" in section
    assert f"`{SCAFFOLD_REWARD}`" in section and f"`{GAME_REWARD}`" in section
    spec_code = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    config = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, flags=re.S).group(1))

    assert run_cli(["init", "countdown"], cwd=tmp_path, timeout=60).returncode == 0
    project = tmp_path / "countdown"
    env_file = project / "countdown" / "server" / "environment.py"
    source = env_file.read_text()
    assert SCAFFOLD_REWARD in source, (
        "the scaffold changed: update step 1 of docs/tutorials/own-env.md"
    )
    env_file.write_text(source.replace(SCAFFOLD_REWARD, GAME_REWARD))
    (project / "countdown" / "text_spec.py").write_text(spec_code)
    # the page's config at test size (fewer warm-up steps and games; the keys as written)
    config["model"] = {"warmup_steps": 60, "warmup_batch_size": 32}
    config["grpo"].update(max_steps=4, per_device_train_batch_size=32, logging_steps=2)
    config["eval"].update(every=2, episodes=48, periodic_episodes=32)
    (project / "countdown.yaml").write_text(yaml.safe_dump(config))

    proc = run_cli(["train", "countdown.yaml"], cwd=project, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    # stdout is a pipe: plain progress lines instead of a bar, and no third-party noise
    assert re.search(r"^step 2/4 \| episodes 64 \| reward -?\d\.\d{3} .*elapsed$", out, re.M), out
    assert re.search(r"^step 4/4 \| .*last eval: greedy", out, re.M), out
    assert "Writing model shards" not in proc.stderr + out
    assert "Warning" not in proc.stderr + out, proc.stderr[-3000:]  # known noise silenced
    assert "next: openenv-train eval runs/countdown/model" in " ".join(out.split())

    run = project / "runs" / "countdown"
    assert (run / "curve.png").read_bytes()[:4] == b"\x89PNG"
    assert (run / "model" / "config.json").is_file() and (run / "best" / "best.json").is_file()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["interrupted"] is False and [p["step"] for p in summary["curve"]] == [0, 2, 4]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in rows if r["kind"] == "train" and "reward" in r]
    assert [r["step"] for r in train] == [2, 4]
    # the rewards are the env's: +1 on the target, -1 over it (or an invalid answer)
    before = summary["before"]
    assert before["episodes"] == 48 and 0.0 < before["win_rate"] < 1.0
    assert abs(before["mean_reward"] - (2 * before["win_rate"] - 1)) < 1e-9

    ev = run_cli(["eval", str(run / "model"), "--episodes", "16"], cwd=project, timeout=120)
    assert ev.returncode == 0, ev.stderr[-2000:]
    assert "mean reward" in ev.stdout
