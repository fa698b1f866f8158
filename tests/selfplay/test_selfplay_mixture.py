"""Self-play in a mixture with single-agent envs: a self-play member is dealt one group per seat
at a time, each group one seat's games of one deal, rewards per seat and per env; the text
recipe trains it beside countdown and evaluates each seat against the built-in random opponent."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from openspiel_games_env.text_spec import SeatTextSpec
from server_helpers import ServerThread

from openenv_train.recipes.grpo_text.countdown import CountdownSpec
from openenv_train.recipes.grpo_text.countdown import app as countdown_app
from openenv_train.rollout.mixture_engine import (
    MixtureEngine,
    MixtureMember,
    env_metric,
    sample_envs,
)
from openenv_train.training.errors import ConfigError

KUHN = {
    "name": "kuhn",
    "app": "openspiel_games_env.server.apps:kuhn_poker",
    "spec": "openspiel_games_env.text_spec:SeatTextSpec",
    "spec_kwargs": {"game": "kuhn_poker"},
}
COUNTDOWN = {
    "name": "countdown",
    "app": "openenv_train.recipes.grpo_text.countdown:app",
    "spec": "openenv_train.recipes.grpo_text.countdown:CountdownSpec",
}


@pytest.fixture(scope="module")
def countdown() -> Iterator[ServerThread]:
    s = ServerThread(countdown_app).start()
    yield s
    s.stop()


def answer(text: str) -> str:
    """Kuhn: bet with a king, else pass (by the last view); countdown: land on the target."""
    words = text.replace("<eos>", " ").split()
    if words[-1] == "action:":
        return "bet" if " card K " in text.split("kuhn")[-1] else "pass"
    return str(min(max(int(words[-2]) - int(words[-4]), 1), 3))


async def test_a_selfplay_member_gets_a_group_per_seat_of_each_deal(kuhn, countdown) -> None:
    from openenv_train.policy.tiny import build_word_tokenizer
    from openenv_train.rollout import RolloutConfig, ScriptedPolicy

    specs = {"kuhn": SeatTextSpec("kuhn_poker"), "countdown": CountdownSpec(seed=1)}
    tok = build_word_tokenizer(list(dict.fromkeys(w for s in specs.values() for w in s.vocabulary)))
    members = [
        MixtureMember("kuhn", specs["kuhn"], [kuhn.url]),
        MixtureMember("countdown", specs["countdown"], [countdown.url]),
    ]
    assert members[0].seats == 2 and members[1].seats == 1
    engine = MixtureEngine(
        members, ScriptedPolicy(tok, answer), RolloutConfig(max_turns=8, max_new_tokens=2), seed=8
    )
    try:
        batch = await engine.run(["p"] * 64, 4)  # 16 groups, dealt two at a time
        with pytest.raises(ValueError, match="takes 2 groups at a time .* this batch has 3"):
            await engine.run(["p"] * 12, 4)
    finally:
        await engine.aclose()
    dealt = sample_envs(["kuhn", "countdown"], [1.0, 1.0], 8, random.Random("8/1"))
    assert set(dealt) == {"kuhn", "countdown"}
    rows = batch.rows
    assert batch.complete and len(rows) == 64
    for g in range(16):
        group = rows[4 * g : 4 * g + 4]
        assert {r.metrics["env"] for r in group} == {dealt[g // 2]}
        assert [r.group for r in group] == [g] * 4 and [r.row for r in group] == list(
            range(4 * g, 4 * g + 4)
        )
        if dealt[g // 2] != "kuhn":
            assert tok.decode(group[0].prompt_ids).startswith("total")
            continue
        seat = g % 2  # a deal's first group is seat 0's, its second seat 1's
        assert {r.metrics["seat"] for r in group} == {seat}
        assert len({tuple(r.prompt_ids) for r in group}) == 1  # one deal per group
        if seat == 1:  # the scripted policy is deterministic: the deal's games end alike,
            other = rows[4 * (g - 1)]  # and the game is zero-sum
            assert all(r.reward == -other.reward for r in group)
    kuhn_rows = [r for r in rows if r.metrics["env"] == "kuhn"]
    assert batch.metrics[env_metric("kuhn", "seat0/mean_return")] == pytest.approx(
        sum(r.reward for r in kuhn_rows if r.metrics["seat"] == 0) / (len(kuhn_rows) / 2)
    )
    assert batch.metrics[env_metric("kuhn", "batch_episodes")] == len(kuhn_rows)


def test_config_deals_a_selfplay_member_whole_and_not_alone() -> None:
    from openenv_train.recipes.grpo_text.config import parse_config

    base = {"recipe": "grpo_text", "model": {"warmup_steps": 0}}
    grpo = {"per_device_train_batch_size": 24, "num_generations": 8}  # 3 groups
    with pytest.raises(ConfigError, match=r"per_device_train_batch_size / num_generations \(24"):
        parse_config({**base, "env": {"mixture": [KUHN, COUNTDOWN]}, "grpo": grpo})
    alone = {k: v for k, v in KUHN.items() if k != "name"}
    with pytest.raises(ConfigError, match="env.spec: SeatTextSpec plays every seat"):
        parse_config({**base, "env": alone})


@pytest.mark.timeout(600)
def test_the_text_recipe_trains_selfplay_beside_countdown(tmp_path) -> None:
    from openenv_train.recipes.grpo_text.config import parse_config
    from openenv_train.recipes.grpo_text.train import run

    cfg = parse_config(
        {
            "recipe": "grpo_text",
            "name": "mix",
            "output_dir": str(tmp_path),
            "progress": False,
            "env": {"mixture": [KUHN, COUNTDOWN]},
            "model": {"warmup_steps": 3},
            "rollout": {"max_turns": 8},
            "grpo": {
                "max_steps": 2,
                "per_device_train_batch_size": 32,
                "num_generations": 4,
                "logging_steps": 1,
            },
            "eval": {"episodes": 8, "periodic_episodes": 8, "every": 1, "trajectories": 0},
        }
    )
    run(cfg)
    lines = (tmp_path / "mix" / "metrics.jsonl").read_text().splitlines()
    rows: list[dict[str, Any]] = [json.loads(line) for line in lines]
    evals = [r for r in rows if r["kind"] in ("eval_before", "eval", "eval_after")]
    assert [r["step"] for r in evals if r["kind"] == "eval"] == [0, 1, 2]
    for r in evals:  # each seat played against the random opponent, 8 games each
        for seat in (0, 1):
            assert r[env_metric("kuhn", f"seat{seat}/episodes")] == 8
        seat_means = [r[env_metric("kuhn", f"seat{s}/mean_reward")] for s in (0, 1)]
        assert r[env_metric("kuhn", "mean_reward")] == pytest.approx(sum(seat_means) / 2)
        assert env_metric("countdown", "mean_reward") in r
    rollouts = [r for r in rows if r["kind"] == "rollout"]
    assert len(rollouts) == 2
    for r in rollouts:
        assert r.get(env_metric("kuhn", "batch_episodes"), 0) % 8 == 0  # whole deals: 2 groups
        if env_metric("kuhn", "batch_episodes") in r:
            assert env_metric("kuhn", "seat0/win") in r
