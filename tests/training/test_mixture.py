"""Env mixtures: groups dealt envs by weight (seeded), records routed to the right env's servers
with that env's reward, per-env metric keys, and the one config schema's errors."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from openenv_train.rollout.mixture_engine import (
    MixtureEngine,
    MixtureMember,
    env_metric,
    sample_envs,
)

COUNTDOWN = {
    "name": "countdown",
    "app": "openenv_train.recipes.grpo_text.countdown:app",
    "spec": "openenv_train.recipes.grpo_text.countdown:CountdownSpec",
}


def test_sampling_follows_the_weights() -> None:
    names, weights = ["a", "b", "c"], [1.0, 2.0, 5.0]
    drawn = Counter(sample_envs(names, weights, 40_000, random.Random(0)))
    for name, w in zip(names, weights, strict=True):
        assert abs(drawn[name] / 40_000 - w / sum(weights)) < 0.01, drawn
    again = sample_envs(names, weights, 50, random.Random(0))
    assert again == sample_envs(names, weights, 50, random.Random(0))  # seeded


@pytest.mark.parametrize(
    ("names", "weights", "match"),
    [([], [], "no envs"), (["a", "a"], [1, 1], "appears 2 times"), (["a", "b"], [1, 0], "> 0")],
)
def test_bad_mixtures_are_named(names: list[str], weights: list[float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        sample_envs(names, weights, 1, random.Random(0))


def parse(env: dict[str, Any]) -> Any:
    from openenv_train.recipes.grpo_text.config import parse_config

    return parse_config({"recipe": "grpo_text", "name": "t", "env": env})


def test_config_schema_members_and_errors() -> None:
    from openenv_train.training.config import ConfigError

    cfg = parse(
        {
            "mixture": [
                COUNTDOWN,
                {"name": "blackjack", "weight": 2},  # a catalog env: app and spec filled
                {"name": "guess_number", "spec_kwargs": {"high": 16}},
            ]
        }
    )
    members = cfg.members()
    assert [m.name for m in members] == ["countdown", "blackjack", "guess_number"]
    assert members[1].section.app == "blackjack_env.server.app:app"
    assert members[1].section.spec == "blackjack_env.text_spec:BlackjackTextSpec"
    assert members[1].weight == 2
    words = set(cfg.vocabulary())  # the tiny model reads every member env
    assert {"total", "target", "player", "dealer", "guess", "higher", "16"} <= words

    with pytest.raises(ConfigError, match=r"env.mixture: env name\(s\) \['countdown'\]"):
        parse({"mixture": [COUNTDOWN, COUNTDOWN]})
    with pytest.raises(ConfigError, match="one member is no mixture"):
        parse({"mixture": [COUNTDOWN]})
    with pytest.raises(ConfigError, match="member 'mine' has no app"):
        parse({"mixture": [COUNTDOWN, {"name": "mine", "spec": COUNTDOWN["spec"]}]})
    with pytest.raises(ConfigError, match=r"env.mixture.1.weight"):
        parse({"mixture": [COUNTDOWN, {**COUNTDOWN, "name": "c2", "weight": 0}]})
    with pytest.raises(ConfigError, match=r"env.mixture.1.wieght: unknown key"):
        parse({"mixture": [COUNTDOWN, {**COUNTDOWN, "name": "c2", "wieght": 1}]})


@pytest.fixture(scope="module")
def three_envs() -> Iterator[dict[str, list[str]]]:
    from openenv_train.runtime import start_local_servers

    groups = {
        name: start_local_servers(app, 1, startup_timeout=180)
        for name, app in (
            ("countdown", COUNTDOWN["app"]),
            ("blackjack", "blackjack_env.server.app:app"),
            ("guess_number", "guess_number_env.server.app:app"),
        )
    }
    try:
        yield {name: list(g.base_urls) for name, g in groups.items()}
    finally:
        for g in groups.values():
            g.stop()


def answer(text: str) -> str:
    """A scripted player of all three envs, telling them apart by their words."""
    words = text.replace("<eos>", " ").split()
    if words[-1] == "add":  # countdown "total T target X add": land on X when 3 or less away
        return str(min(max(int(words[-2]) - int(words[-4]), 1), 3))
    if words[-1] == "action:":  # blackjack
        return "stand"
    return str((int(words[-3]) + int(words[-1])) // 2)  # guess_number "... from LO to HI"


@pytest.mark.timeout(600)
def test_engine_routes_groups_and_keeps_rewards_per_env(three_envs: dict[str, list[str]]) -> None:
    from blackjack_env.text_spec import BlackjackTextSpec
    from guess_number_env.text_spec import GuessNumberTextSpec

    from openenv_train.client.sync import run_blocking
    from openenv_train.policy.tiny import build_word_tokenizer
    from openenv_train.recipes.grpo_text.countdown import CountdownSpec
    from openenv_train.rollout import RolloutConfig, ScriptedPolicy

    specs = {
        "countdown": CountdownSpec(seed=1),
        "blackjack": BlackjackTextSpec(seed=1),
        "guess_number": GuessNumberTextSpec(seed=1),
    }
    words = [w for s in specs.values() for w in s.vocabulary]
    tok = build_word_tokenizer(list(dict.fromkeys(words)))
    weights = {"countdown": 1.0, "blackjack": 1.0, "guess_number": 2.0}
    members = [MixtureMember(n, specs[n], three_envs[n], weights[n]) for n in specs]
    policy = ScriptedPolicy(tok, answer)

    async def play() -> Any:
        async with MixtureEngine(
            members, policy, RolloutConfig(max_turns=8, max_new_tokens=2), seed=3
        ) as engine:
            first = await engine.run(["p"] * 64, 4)  # 16 groups of 4
            second = await engine.run(["p"] * 64, 4)
            return first, second

    batch, second = run_blocking(play())
    assert batch.complete and len(batch.records) == 64
    # batch c of seed s deals from Random(f"{s}/{c}"): recomputed here
    dealt = sample_envs(list(specs), [weights[n] for n in specs], 16, random.Random("3/1"))
    assert len(set(dealt)) == 3
    first_words = {"countdown": "total", "blackjack": "player", "guess_number": "guess"}
    for row, rec in enumerate(batch.rows):
        assert rec is not None and rec.row == row and rec.group == row // 4
        env = rec.metrics["env"]
        assert env == dealt[row // 4]  # one env per group, as dealt
        assert tok.decode(rec.prompt_ids).startswith(first_words[env])
        if env == "countdown":
            assert rec.reward in (-1.0, 1.0)
        elif env == "blackjack":
            assert rec.reward in (-1.0, 0.0, 1.0)
        else:
            assert 0.0 <= rec.reward <= 1.0
    for env in specs:
        mine = [r.reward for r in batch.records if r.metrics["env"] == env]
        if mine:
            assert batch.metrics[env_metric(env, "reward_mean")] == pytest.approx(
                sum(mine) / len(mine)
            )
            assert batch.metrics[env_metric(env, "batch_episodes")] == len(mine)
    total = Counter(r.metrics["env"] for b in (batch, second) for r in b.records)
    assert {env: second.metrics[env_metric(env, "episodes")] for env in specs} == {
        env: total[env] for env in specs
    }
    assert batch.metrics["reward_mean"] == pytest.approx(sum(r.reward for r in batch.records) / 64)


@pytest.mark.timeout(900)
def test_mixture_run_logs_per_env_metrics_and_curves(tmp_path) -> None:
    import json

    from openenv_train.recipes.grpo_text.config import parse_config
    from openenv_train.recipes.grpo_text.train import run

    cfg = parse_config(
        {
            "recipe": "grpo_text",
            "name": "mix",
            "output_dir": str(tmp_path),
            "progress": False,
            "env": {
                "mixture": [COUNTDOWN, {"name": "blackjack"}, {"name": "guess_number", "weight": 2}]
            },
            "model": {"warmup_steps": 3},
            "rollout": {"max_turns": 6},
            "grpo": {
                "max_steps": 2,
                "per_device_train_batch_size": 32,
                "num_generations": 4,
                "max_completion_length": 96,
                "logging_steps": 1,
            },
            "eval": {"episodes": 8, "periodic_episodes": 8, "every": 1, "trajectories": 0},
        }
    )
    summary = run(cfg)
    rows = [
        json.loads(line) for line in (tmp_path / "mix" / "metrics.jsonl").read_text().splitlines()
    ]
    envs = ("countdown", "blackjack", "guess_number")
    evals = [r for r in rows if r["kind"] == "eval"]
    assert [r["step"] for r in evals] == [0, 1, 2]
    for r in evals + [r for r in rows if r["kind"] in ("eval_before", "eval_after")]:
        for env in envs:
            assert env_metric(env, "mean_reward") in r and env_metric(env, "episodes") in r
    rollouts = [r for r in rows if r["kind"] == "rollout"]
    assert rollouts
    for r in rollouts:
        assert sum(r[env_metric(env, "episodes")] for env in envs) == r["episodes"]
        dealt = [env for env in envs if env_metric(env, "batch_episodes") in r]
        assert dealt and all(env_metric(env, "reward_mean") in r for env in dealt)
    assert summary["panels"] == [[env_metric(e, "mean_reward"), f"{e}: mean reward"] for e in envs]
    assert (tmp_path / "mix" / "curve.png").stat().st_size > 0


def test_environment_factory_dataset_routes_by_column() -> None:
    from openenv_train.training.factory_mixture import mixture_dataset

    ds = mixture_dataset({"guess_number": 3.0, "wordle": 1.0}, 4000, seed=5)
    envs = Counter(ds["environment"])
    assert set(envs) == {"guess_number", "wordle"}
    assert abs(envs["guess_number"] / 4000 - 0.75) < 0.03
    assert ds[0]["prompt"] == [{"role": "user", "content": ""}]
    assert (
        mixture_dataset({"a": 1, "b": 1}, 20, seed=5)["environment"]
        == (mixture_dataset({"a": 1, "b": 1}, 20, seed=5)["environment"])
    )
    with pytest.raises(ValueError, match="weight"):
        mixture_dataset({"a": 1, "b": -1}, 4)
