"""OpenEnv's published envs (connect4_env, maze_env, openenv_echo_env), ported with their imports
changed only: served by our server, passing ``openenv-train validate``, played by their own
OpenEnv-style clients, and each trained by the generic text recipe for a few steps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_runs import ROOT, run_cli

from openenv_train.runtime import LocalProcessProvider

PORTED = {"connect4_env": "connect4_env.server.app:app", "maze_env": "maze_env.server.app:app"}
OPENENV_IMPORT = ("from openenv.", "import openenv", "from openenv_core", "from core.")


@pytest.mark.parametrize("package", sorted(PORTED))
def test_the_port_changed_imports_only(package: str) -> None:
    """No OpenEnv import is left; the env's own code is OpenEnv's (its classes, its logic)."""
    for path in (ROOT / "envs" / package / package).rglob("*.py"):
        text = path.read_text()
        assert not any(s in text for s in OPENENV_IMPORT), path


@pytest.mark.parametrize("package", sorted(PORTED))
def test_validate_passes(package: str) -> None:
    proc = run_cli(["validate", f"envs/{package}", "--json", "--max-probe", "4"], cwd=ROOT)
    report = json.loads(proc.stdout)
    failed = [c for c in report["checks"] if c["ok"] is False]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert not failed


def test_connect4_plays_with_its_own_client() -> None:
    from connect4_env import Connect4Action, Connect4Env

    with LocalProcessProvider(PORTED["connect4_env"]) as p:
        with Connect4Env(base_url=p.start()) as env:  # OpenEnv's blocking idiom
            result = env.reset()
            assert result.observation.legal_actions == list(range(7))
            for _ in range(3):  # x and o stack column 0 and 1: x wins on column 0 after 4
                env.step(Connect4Action(column=0))
                env.step(Connect4Action(column=1))
            result = env.step(Connect4Action(column=0))
            assert result.done and result.reward == 1.0
            state = env.state()
            assert state.step_count == 7 and state.board[2][0] == 1


async def test_maze_plays_with_its_own_client() -> None:
    from maze_env import MazeAction, MazeEnv

    with LocalProcessProvider(PORTED["maze_env"]) as p:
        async with MazeEnv(base_url=p.start()) as env:
            result = await env.reset()
            assert result.observation.current_position == [0, 0]
            result = await env.step(MazeAction(action=3))  # right
            assert result.observation.current_position == [1, 0]
            assert (await env.state()).status == "playing"


def train_ported(tmp_path: Path, name: str, env: dict[str, Any], **sections: Any) -> list[dict]:
    """``openenv-train train`` (the generic text recipe) for 2 GRPO steps; the train rows logged."""
    config = {
        "recipe": "grpo_text",
        "name": name,
        "output_dir": str(tmp_path / "runs"),
        "env": env,
        "model": {"warmup_steps": 0},
        "rollout": {"max_turns": 6, "max_new_tokens": 1, **sections.pop("rollout", {})},
        "grpo": {
            "max_steps": 2,
            "num_generations": 4,
            "per_device_train_batch_size": 8,
            "logging_steps": 1,
        },
        "eval": {"every": 2, "episodes": 8, "periodic_episodes": 8},
        **sections,
    }
    (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(config))
    for helper in ("ported_specs.py", "echo_task_app.py", "maze_task_app.py"):
        (tmp_path / helper).write_text((Path(__file__).parent / helper).read_text())
    proc = run_cli(["train", f"{name}.yaml"], cwd=tmp_path, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    metrics = tmp_path / "runs" / name / "metrics.jsonl"
    rows = [json.loads(x) for x in metrics.read_text().splitlines()]
    train = [r for r in rows if r["kind"] == "train" and "reward" in r]
    assert [r["step"] for r in train] == [1, 2]
    return train


def test_connect4_trains_with_the_text_recipe(tmp_path: Path) -> None:
    train_ported(
        tmp_path, "connect4", {"app": PORTED["connect4_env"], "spec": "ported_specs:Connect4Spec"}
    )


def test_maze_trains_on_one_session_servers(tmp_path: Path) -> None:
    """The maze's app keeps OpenEnv's ``max_concurrent_envs=1``: one session per server. So the
    run starts as many servers as it plays episodes at once (``env.num_servers`` =
    ``rollout.max_concurrency``); the pool gives each server one session and reuses it.
    (``maze_task_app``: the ported env and app settings on a 2x2 maze a few turns can solve.)"""
    env = {"app": "maze_task_app:app", "spec": "ported_specs:MazeSpec", "num_servers": 2}
    train = train_ported(tmp_path, "maze", env, rollout={"max_concurrency": 2})
    assert max(r["reward_std"] for r in train) > 0, "every episode scored alike: nothing to learn"


def test_fastmcp_echo_trains_through_tool_call_steps(tmp_path: Path) -> None:
    """The ported echo env's FastMCP tool, called as a step per episode, scored by a task
    (``echo_task_app``): GRPO gets rewards that differ within a group."""
    env = {"app": "echo_task_app:app", "spec": "ported_specs:EchoSpec"}
    train = train_ported(tmp_path, "echo", env, rollout={"max_turns": 1})
    assert max(r["reward_std"] for r in train) > 0, "every episode scored alike: nothing to learn"
