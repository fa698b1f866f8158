"""Installed verifiers environments as envs, scored by their rubrics: vf-arithmetic (bundled,
generated data) driven by OpenEnv 0.10's GenericEnvClient and by our rollout engine."""

from __future__ import annotations

import re

import pytest
from ecosystem_helpers import play, serve
from openenv.core import GenericEnvClient
from verifiers_env.installed import env_ids
from verifiers_env.text_spec import VerifiersSpec
from vf_arithmetic import arithmetic_rows

from openenv_train.catalog import UnknownEnvError, env_names, get_entry


def test_installed_verifiers_environments_are_in_the_catalog() -> None:
    assert "vf-arithmetic" in env_ids()
    assert "verifiers/vf-arithmetic" in env_names()
    assert get_entry("verifiers/vf-arithmetic").app == "verifiers_env.server.apps:vf-arithmetic"
    with pytest.raises(UnknownEnvError, match="no verifiers environment 'vf-nowhere'"):
        get_entry("verifiers/vf-nowhere")


def test_openenv_generic_client_gets_rubric_rewards() -> None:
    rows = arithmetic_rows(200, 0, 9)  # vf-arithmetic's defaults: row s % 200 for seed s
    with serve("verifiers/vf-arithmetic") as url, GenericEnvClient(base_url=url).sync() as env:
        first = env.reset(seed=3)
        assert first.observation["question"] == rows[3]["question"]
        assert first.observation["prompt"][0]["role"] == "system"
        assert env.reset(seed=203).observation["question"] == rows[3]["question"]
        right = env.step({"answer": rows[3]["answer"]})
        assert right.done is True and right.reward == 1.0
        assert right.observation["scores"]["exact_answer"] == 1.0
        env.reset(seed=3)
        wrong = env.step({"answer": "-1"})
        assert wrong.done is True and wrong.reward == 0.0
        assert wrong.observation["expected"] == rows[3]["answer"]


def test_bad_input_gets_a_clear_error_and_the_session_survives() -> None:
    with serve("verifiers/vf-arithmetic") as url, GenericEnvClient(base_url=url).sync() as env:
        env.reset(seed=0)
        with pytest.raises(RuntimeError, match=r"'answer': Field required.*VALIDATION_ERROR"):
            env.step({"completion": "3"})  # the field is `answer`
        with pytest.raises(
            RuntimeError, match=r"'seed': Input should be greater than or equal to 0"
        ):
            env.reset(seed=-2)
        env.reset(seed=0)
        assert env.step({"answer": "3"}).done is True  # the same session goes on


def add(text: str) -> str:
    a, b = re.findall(r"What is (\d+) \+ (\d+)\?", text)[-1]
    return str(int(a) + int(b))


async def test_rollout_engine_scores_with_the_rubric() -> None:
    with serve("verifiers/vf-arithmetic") as url:
        batch = await play(VerifiersSpec(seed=0), url, add, episodes=8, group_size=4)
        wrong = await play(VerifiersSpec(seed=0), url, lambda text: "100", episodes=4)
    assert batch.complete and [r.reward for r in batch.records] == [1.0] * 8
    assert [r.reward for r in wrong.records] == [0.0] * 4
