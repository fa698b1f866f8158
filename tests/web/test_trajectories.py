"""The eval samples the viewer reads: recorded from the one episode loop, only when asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from run_folder import HANDS, KEPT, Env, recorded_eval, tiny_policy

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
