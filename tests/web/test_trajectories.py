"""The eval samples the viewer reads: recorded from the one episode loop (and the self-play
runner, seat by seat), only when asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from run_folder import (
    GAMES,
    GAMES_KEPT,
    HANDS,
    KEPT,
    Env,
    SelfPlayEnv,
    recorded_eval,
    recorded_selfplay,
    tiny_policy,
)

from openenv_train.rollout import episode as episode_loop
from openenv_train.training.periodic_evals import write_trajectories


@pytest.fixture(scope="module")
def policy() -> Any:
    return tiny_policy()


def test_a_recorder_keeps_the_first_episodes_in_the_order_they_start(policy: Any) -> None:
    from blackjack_env.game import BlackjackGame
    from blackjack_env.text_spec import decision_text, game_view

    episodes = recorded_eval(policy, seed=3)
    assert len(episodes) == KEPT < HANDS
    for hand, ep in enumerate(episodes):  # hand k is the game dealt with seed 3 + k
        prompt = ep["turns"][0]
        assert prompt["role"] == "prompt"
        assert decision_text(game_view(BlackjackGame.deal(seed=3 + hand))) in prompt["text"]
        model = [t for t in ep["turns"] if t["role"] == "model"]
        assert len(model) == ep["num_turns"] >= 1
        assert all(len(t["tokens"]) == len(t["logprobs"]) > 0 for t in model)
        assert all(lp <= 0 for t in model for lp in t["logprobs"])
        assert ep["reward"] in (-1.0, 0.0, 1.0, 1.5)
        if ep["stop"] == "done":  # the end of the hand, as the viewer shows it
            assert ep["turns"][-1]["role"] == "env" and "dealer" in ep["turns"][-1]["text"]
    # recording is passed in, never process-global: nothing is recorded between evals
    assert not [name for name in vars(episode_loop) if "RECORDERS" in name.upper()]


def test_without_a_recorder_the_loop_keeps_nothing(policy: Any) -> None:
    from blackjack_env.evaluation import evaluate_policy

    from openenv_train.rollout.episode import EpisodeRecorder

    recorder = EpisodeRecorder(KEPT)
    evaluate_policy(policy, 2, 3, recorder=recorder)
    kept = list(recorder.episodes)
    assert len(kept) == 2
    evaluate_policy(policy, 4, 3)  # played without it: the recorder sees none of these
    assert recorder.episodes == kept


def test_write_trajectories_one_episode_a_line_with_its_task(tmp_path: Path, policy: Any) -> None:
    episodes = recorded_eval(policy)
    path = write_trajectories(tmp_path, 50, episodes, Env())
    assert path == tmp_path / "trajectories" / "step_000050.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["task"] for r in rows] == list(range(KEPT))
    assert {r["step"] for r in rows} == {50} and rows[0]["env"] == Env.app


def test_eval_trajectories_is_a_config_key_with_a_small_default() -> None:
    from pydantic import ValidationError

    from openenv_train.training.config import EvalSection

    assert 0 < EvalSection().trajectories <= 32
    assert EvalSection(trajectories=0).trajectories == 0
    with pytest.raises(ValidationError, match="trajectories"):
        EvalSection(trajectories=-1)


@pytest.fixture(scope="module")
def selfplay(kuhn: Any) -> tuple[list[dict[str, Any]], list[Any]]:
    return recorded_selfplay(kuhn.url)


def test_self_play_games_are_recorded_seat_by_seat(selfplay: Any, tmp_path: Path) -> None:
    episodes, games = selfplay
    assert len(games) == GAMES and len(episodes) == GAMES_KEPT  # a bounded sample: the first
    for ep, game in zip(episodes, games, strict=False):  # ... in the order they started
        assert ep["rewards"] == game.returns and len(ep["rewards"]) == 2
        assert ep["reward"] is None and ep["stop"] == game.stop
        model = [t for t in ep["turns"] if t["role"] == "model"]
        assert [t["seat"] for t in model] == game.answers  # in play order, seat by seat
        assert len(model) == ep["num_turns"] == sum(s.turns for s in game.seats) >= 2
        assert all(len(t["tokens"]) == len(t["logprobs"]) > 0 for t in model)
        # each answer comes right after what its own seat was shown: its prompt, then env text
        shown = ep["turns"][: 2 * len(model)]
        assert [t["role"] for t in shown[1::2]] == ["model"] * len(model)
        assert [t["seat"] for t in shown[0::2]] == [t["seat"] for t in model]
        for seat in (0, 1):
            views = [t for t in shown[0::2] if t["seat"] == seat]
            assert [t["role"] for t in views] == ["prompt"] + ["env"] * (len(views) - 1)
            assert all(f"kuhn seat {seat} card" in t["text"] for t in views)  # its own cards
        if game.end is not None:  # the view the game ended on, the last mover's
            assert ep["turns"][-1]["role"] == "env" and ep["turns"][-1]["seat"] == model[-1]["seat"]
    path = write_trajectories(tmp_path, 0, episodes, SelfPlayEnv())
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["task"] for r in rows] == list(range(GAMES_KEPT))
    assert rows[0]["env"] == SelfPlayEnv.app and rows[0]["rewards"] == episodes[0]["rewards"]
    assert {t["seat"] for r in rows for t in r["turns"]} == {0, 1}


def test_self_play_without_a_recorder_decodes_nothing(
    kuhn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from run_folder import selfplay_games

    from openenv_train.rollout import selfplay as runner_module

    decoded: list[Any] = []
    monkeypatch.setattr(runner_module, "game_turns", lambda *a: decoded.append(a) or {})
    assert len(asyncio.run(selfplay_games(kuhn.url, 11, None))) == GAMES
    assert decoded == []
