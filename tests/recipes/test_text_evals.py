"""The text recipe's evals of a spec written the README's way (no ``seed`` of its own) play the
same games every time, and every env gets a random-policy baseline on those games."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from openenv_train.policy.tiny import build_word_tokenizer
from openenv_train.recipes.grpo_text.config import parse_config
from openenv_train.recipes.grpo_text.countdown import CountdownAction, CountdownEnv, board
from openenv_train.recipes.grpo_text.evaluate import (
    evaluate_on_servers,
    random_baseline,
    seeded_spec,
)
from openenv_train.rollout.scripted import ScriptedPolicy
from openenv_train.rollout.spec import TextEnvSpec
from openenv_train.runtime import start_servers

APP = "openenv_train.recipes.grpo_text.countdown:app"


class ReadmeSpec(TextEnvSpec):
    """Countdown as the README writes a spec: no ``seed``; the env deals a random target."""

    client_cls = CountdownEnv
    vocabulary = ("total", "target", "add", *(str(i) for i in range(13)))

    def initial_prompt(self, result: Any, prompt: Any) -> str:
        return board(result.observation.total, result.observation.target)

    def render(self, result: Any) -> str:
        return " " + board(result.observation.total, result.observation.target)

    def parse_action(self, text: str) -> CountdownAction | None:
        move = text.replace("<eos>", " ").strip()
        return CountdownAction(add=int(move)) if move in ("1", "2", "3") else None


@pytest.fixture(scope="module")
def urls() -> Iterator[list[str]]:
    servers = start_servers(APP, 1, runtime="local")
    try:
        yield list(servers.base_urls)
    finally:
        servers.stop()


def test_a_readme_spec_plays_the_same_games_at_every_eval(urls: list[str]) -> None:
    cfg = parse_config({"name": "x"})
    readme = SimpleNamespace(make_spec=ReadmeSpec, rollout=cfg.rollout)
    tokenizer = build_word_tokenizer(ReadmeSpec.vocabulary)

    def boards(seed: int) -> list[str]:
        seen: list[str] = []
        policy = ScriptedPolicy(tokenizer, lambda text: seen.append(text) or "3")
        evaluate_on_servers(policy, seeded_spec(readme, seed), urls, 48, cfg)
        return sorted(t for t in seen if t.count("total") == 1)  # each game's first turn

    first = boards(5)
    assert len(first) == 48 and len(set(first)) > 1  # random targets, all six in reach
    assert boards(5) == first  # the same games again: before, periodic, after, `eval`
    assert boards(1000) != first


def test_every_env_gets_a_random_baseline(urls: list[str]) -> None:
    cfg = parse_config({"name": "x"})
    tokenizer = build_word_tokenizer(cfg.vocabulary())
    first = random_baseline(cfg, tokenizer, urls, 64, seed=3)
    assert set(first) == {"random"}
    random = first["random"]
    assert random["episodes"] == 64 and random["invalid"] == 0
    assert 0.1 < random["win_rate"] < 0.9  # a random player wins some games, not all
    assert random_baseline(cfg, tokenizer, urls, 64, seed=3) == first


def test_the_eval_seed_wins_over_a_seed_the_spec_returns() -> None:
    """A spec whose ``reset_kwargs`` returns its own ``seed`` (say, from the GRPO group) would
    otherwise deal the same games at every eval whatever ``eval.seed`` says; other keys stay."""

    class OwnSeed(ReadmeSpec):
        def reset_kwargs(self, prompt: Any, group: int, row: int) -> dict[str, Any]:
            return {"seed": group, "target": 7}

    cfg = SimpleNamespace(make_spec=OwnSeed)
    spec = seeded_spec(cfg, 100)  # type: ignore[arg-type]
    assert spec.reset_kwargs("eval", 0, 3) == {"seed": 103, "target": 7}
    assert seeded_spec(cfg, 500).reset_kwargs("eval", 0, 3)["seed"] == 503  # type: ignore[arg-type]
