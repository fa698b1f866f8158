"""The learning-curve recipe on Harbor tasks (``configs/grpo_harbor_family_cpu.yaml``): the
generated family's text spec (the tiny model's words, a warm-up that teaches the call format and
not which file), and a short run through the ``grpo_text`` recipe against the family server in
real task containers (the docs' curve is the full run of the same config)."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from harbor_env import load_tasks
from harbor_env.family import (
    DONE,
    WORDS,
    FamilyTextSpec,
    prompt,
    write_call,
    write_family,
    write_reply,
)
from harbor_env.models import HarborObservation
from harbor_support import BASE_IMAGE, containers_owned_by

from openenv_train import CallToolAction, StepResult
from openenv_train.policy.tiny import missing_words
from openenv_train.recipes.grpo_text.config import load_config, parse_config
from openenv_train.training.config import ConfigError

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "grpo_harbor_family_cpu.yaml"
TASK_IDS = sorted(f"create_{w}" for w in WORDS)


def test_the_config_loads_and_passes_the_start_checks() -> None:
    cfg = load_config(CONFIG)
    cfg.check_start()  # the spec builds, its vocabulary covers its texts, it has warm-up games
    assert cfg.recipe == "grpo_text" and cfg.model.path is None
    assert cfg.env.app == "harbor_env.server.family_app:app"
    assert isinstance(cfg.make_spec(), FamilyTextSpec)
    assert cfg.vocabulary() == list(FamilyTextSpec().vocabulary)
    # every group shares a task and the batch holds every task: 2 groups of 8 per task
    assert cfg.grpo.per_device_train_batch_size == 2 * len(WORDS) * cfg.grpo.num_generations
    assert cfg.eval.every % cfg.grpo.extra.get("num_iterations", 1) == 0  # one eval per batch


def test_the_warm_up_prompt_is_the_env_prompt(tmp_path: Path) -> None:
    """random_episode's first text is what the spec makes of each task's own instruction."""
    spec = FamilyTextSpec()
    tasks = load_tasks(write_family(tmp_path))
    assert sorted(tasks) == TASK_IDS
    for word in WORDS:
        obs = HarborObservation(
            task_id=f"create_{word}", instruction=tasks[f"create_{word}"].instruction
        )
        assert spec.initial_prompt(StepResult(observation=obs), "env") == prompt(word)
    bare = FamilyTextSpec(instructions=False)
    obs = HarborObservation(task_id="create_apple", instruction=tasks["create_apple"].instruction)
    assert bare.initial_prompt(StepResult(observation=obs), "env") == prompt("apple", False)


def test_random_episodes_teach_the_format_not_the_file() -> None:
    spec = FamilyTextSpec()
    pairs: Counter[tuple[str, str]] = Counter()
    texts: list[str] = []
    for i in range(2000):
        turns = spec.random_episode(random.Random(i))
        assert [role for role, _ in turns] == ["user", "assistant", "user", "assistant"]
        (_, first), (_, call), (_, reply), (_, last) = turns
        action = spec.parse_action(call)
        assert isinstance(action, CallToolAction) and action.tool_name == "write_file"
        guess = action.arguments["path"]
        assert action.arguments == {"path": guess, "content": ""} and guess in WORDS
        assert call == write_call(guess) and reply == write_reply(guess) and last == DONE
        assert spec.parse_action(last) == CallToolAction(tool_name="submit", arguments={})
        word = next(w for w in WORDS if first == prompt(w))
        pairs[word, guess] += 1
        texts += [first, call, reply, last]
    assert len(pairs) == len(WORDS) ** 2  # every file for every task: the answer is not taught
    right = sum(n for (word, guess), n in pairs.items() if word == guess) / 2000
    assert 0.2 < right < 0.3, right
    assert missing_words(spec.vocabulary, texts) == []


def test_a_vocabulary_without_a_word_of_the_family_fails_at_load() -> None:
    env = {"app": "harbor_env.server.family_app:app", "spec": "harbor_env.family:FamilyTextSpec"}
    words = [w for w in FamilyTextSpec().vocabulary if w != "wrote"]
    with pytest.raises(ConfigError, match="'wrote'"):
        parse_config({"name": "x", "env": env, "model": {"vocabulary": words}})


def test_a_group_shares_its_task_and_the_groups_cover_every_task() -> None:
    spec = FamilyTextSpec(seed=0)
    spec.begin_run()
    seeds = {g: {spec.reset_kwargs("env", g, row)["seed"] for row in range(8)} for g in range(4)}
    assert all(len(s) == 1 for s in seeds.values())
    assert {TASK_IDS[s.pop() % len(TASK_IDS)] for s in seeds.values()} == set(TASK_IDS)
    first = spec.reset_kwargs("env", 0, 0)
    spec.begin_run()
    assert spec.reset_kwargs("env", 0, 0) != first  # the next batch: other games
    assert FamilyTextSpec().reset_kwargs("env", 0, 0) == {}  # no seed: the env draws


# ---- a short run through the recipe, real task containers ---------------------------------------


def short_config(tmp_path: Path) -> Any:
    data = yaml.safe_load(CONFIG.read_text())
    data.update(output_dir=str(tmp_path), name="family", progress=False)  # the same warm-up
    data["grpo"].update(
        max_steps=2, per_device_train_batch_size=16, logging_steps=1, extra={"num_iterations": 1}
    )
    data["eval"].update(episodes=4, periodic_episodes=4, every=1, trajectories=4)
    return parse_config(data)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_short_run_on_the_family_server_finishes_and_leaves_no_container(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openenv_train.recipes.grpo_text import train
    from openenv_train.runtime import container_engine as ce

    try:
        ce.connect("docker").api.inspect_image(BASE_IMAGE)
    except Exception as err:
        pytest.fail(
            f"no docker engine or no base image {BASE_IMAGE} ({err}): run "
            "scripts/container_engines.sh",
            pytrace=False,
        )
    monkeypatch.setenv("HARBOR_BASE_IMAGE", BASE_IMAGE)  # the server's child process reads it
    pids: list[int] = []
    start = train.start_servers

    def recording(cfg: Any, env: Any = None) -> Any:
        servers, urls = start(cfg, env)
        pids.extend(p.pid for p in servers)
        return servers, urls

    monkeypatch.setattr(train, "start_servers", recording)
    summary = train.run(short_config(tmp_path))

    run = tmp_path / "family"
    assert not summary["interrupted"] and summary["steps"] == 2
    assert (run / "curve.png").stat().st_size > 0 and (run / "model").is_dir()
    assert json.loads((run / "summary.json").read_text())["steps"] == 2
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in rows if r["kind"] in ("eval", "eval_before", "eval_after")]
    assert [r["step"] for r in rows if r["kind"] == "eval"] == [0, 1, 2]
    assert all(0.0 <= r["mean_reward"] <= 1.0 and r["invalid"] == 0.0 for r in evals)
    trained = [r for r in rows if r["kind"] == "train" and "reward" in r]
    assert len(trained) == 2 and all(0.0 <= r["reward"] <= 1.0 for r in trained)
    episodes = [
        json.loads(line)
        for path in sorted((run / "trajectories").glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    assert episodes and all(e["reward"] in (0.0, 1.0) for e in episodes)
    for e in episodes:  # the env answered each write with the text the warm-up taught
        replies = [t["text"] for t in e["turns"] if t["role"] == "env"]
        assert replies and all(r in {write_reply(w) for w in WORDS} for r in replies), replies
    assert pids and all(containers_owned_by(pid) == [] for pid in pids)
