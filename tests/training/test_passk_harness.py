"""``PassAtKEval``: our pass@k eval against a real guess-the-number server on loopback. A
scripted binary search solves every game (pass@1 = 1), always guessing 1 rarely does; the record
(plain JSON) keeps every parameter, and running its config again gives the same scores. Bad
parameters fail before any episode, naming the field. (OpenEnv's ``PassAtKHarness`` over it:
tests/compat/test_evals.py.)"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from openenv_train.rollout import RolloutConfig, ScriptedPolicy
from openenv_train.training import PassAtKEval
from openenv_train.training.passk import EvalTarget

APP = "guess_number_env.server.app:app"
SPEC = "guess_number_env.text_spec:GuessNumberTextSpec"
ROLLOUT = RolloutConfig(max_turns=8, max_new_tokens=2, temperature=1.0, episode_seed=0)


def binary_search(text: str) -> str:
    words = text.replace("<eos>", " ").split()
    return str((int(words[-3]) + int(words[-1])) // 2)  # "... it is from LO to HI"


def policy(respond):  # type: ignore[no-untyped-def]
    from guess_number_env.text_spec import vocabulary

    from openenv_train.policy.tiny import build_word_tokenizer

    return ScriptedPolicy(build_word_tokenizer(list(vocabulary(16))), respond)


@pytest.fixture(scope="module")
def guess_url() -> Iterator[str]:
    from openenv_train.runtime import LocalProcessProvider

    with LocalProcessProvider(APP, startup_timeout=120) as server:
        yield server.base_url


@pytest.mark.timeout(300)
def test_an_eval_record_keeps_its_parameters_and_reproduces(guess_url: str) -> None:
    target = EvalTarget("guess_number", APP, SPEC, {"high": 16}, [guess_url])
    harness = PassAtKEval(policy(binary_search), [target])
    config = harness.config(tasks=4, k=2, seed=7, rollout=ROLLOUT, model="scripted")
    result = harness.run_config(config)

    assert result["config"] == config and set(result) == {"config", "scores"}
    scores = result["scores"]["guess_number"]
    assert scores["pass@1"] == scores["pass@2"] == 1.0  # binary search finds 1..16 in 5 guesses
    assert scores["tasks"] == 4 and scores["k"] == 2 and scores["episodes"] == 8
    assert scores["mean@2"] > 0
    assert config["harness_name"] == "PassAtKEval" and config["dataset"] == "guess_number"
    assert {"openenv-train", "torch", "transformers"} <= set(config["library_versions"])
    params = config["eval_parameters"]
    assert (params["tasks"], params["k"], params["seed"], params["model"]) == (4, 2, 7, "scripted")
    assert params["rollout"]["max_turns"] == 8 and params["rollout"]["episode_seed"] == 0

    rows = harness.trajectories
    assert len(rows) == 8 and {r["seed"] for r in rows} == {7, 8, 9, 10}
    assert all(r["env"] == "guess_number" and r["reward"] > 0 for r in rows)

    again = json.loads(json.dumps(result))  # the record is plain JSON
    assert again == result
    assert (
        harness.run_config(again["config"])["scores"] == result["scores"]
    )  # same config, same scores


@pytest.mark.timeout(300)
def test_a_weak_policy_scores_lower_on_servers_the_harness_starts() -> None:
    target = EvalTarget("guess_number", APP, SPEC, {"high": 16})  # no urls: started for the eval
    harness = PassAtKEval(policy(lambda text: "1"), [target])
    result = harness.run_config(harness.config(tasks=8, k=2, rollout=ROLLOUT))
    scores = result["scores"]["guess_number"]
    assert scores["episodes"] == 16 and scores["pass@1"] < 0.5


def test_bad_parameters_are_named_before_any_episode() -> None:
    target = EvalTarget("guess_number", APP, SPEC, urls=["http://127.0.0.1:9"])  # never reached
    harness = PassAtKEval(policy(binary_search), [target])
    good = harness.config(tasks=2, k=2)
    params = good["eval_parameters"]
    cases = {
        "tasks": {**params, "tasks": 0},
        "rollout.temperature": {**params, "rollout": {"temperature": "hot"}},
        "temprature": {**params, "rollout": {"temprature": 1.0}},
        "samples": {**params, "samples": 4},
    }
    for field, bad in cases.items():
        with pytest.raises(ValueError, match=field):
            harness.run("guess_number", bad)
    with pytest.raises(ValueError, match="dataset: 'countdown' must name .*guess_number"):
        harness.run("countdown", params)
    with pytest.raises(ValueError, match="dataset"):
        harness.config(tasks=2, k=2, envs=["countdown"])
    with pytest.raises(ValueError, match="targets"):
        PassAtKEval(harness.policy, [])
    assert good["dataset"] == "guess_number"
