"""reasoning-gym datasets as envs: every dataset answers to the catalog and scores with its own
scorer; OpenEnv 0.10's GenericEnvClient and our rollout engine drive a sample on loopback."""

from __future__ import annotations

import pytest
from ecosystem_helpers import play, serve
from openenv.core import GenericEnvClient
from reasoning_gym_env.names import dataset_names, live_dataset_names
from reasoning_gym_env.server.environment import ReasoningGymEnvironment
from reasoning_gym_env.text_spec import ReasoningGymSpec, sample_items

from openenv_train.catalog import env_names, get_entry

SAMPLE = ("leg_counting", "basic_arithmetic", "word_sorting")


def test_every_dataset_is_an_env_scored_by_its_own_scorer() -> None:
    names = dataset_names()
    assert names == live_dataset_names() and len(names) >= 100  # the written-out list is true
    assert {f"reasoning_gym/{n}" for n in names} <= set(env_names())
    perfect = 0
    for name in names:
        env = ReasoningGymEnvironment(name)
        first = env.reset(seed=5)
        assert first.question and first.done is False and first.dataset == name
        expected = env._entry["answer"]  # noqa: SLF001: the reference answer, to score it
        result = env.step(get_entry(f"reasoning_gym/{name}").action()(answer=str(expected)))
        assert result.done is True and 0.0 <= result.reward <= 1.0, name
        perfect += result.reward == 1.0
    # a few datasets' stored answers are not in the form their scorer reads (e.g. rubiks_cube)
    assert perfect >= len(names) - 10


@pytest.mark.parametrize("dataset", SAMPLE)
def test_openenv_generic_client_plays_seeded_tasks(dataset: str) -> None:
    with serve(f"reasoning_gym/{dataset}") as url, GenericEnvClient(base_url=url).sync() as env:
        first = env.reset(seed=11)
        again = env.reset(seed=11)
        assert first.observation["question"] == again.observation["question"]
        assert env.reset(seed=12).observation["question"] != first.observation["question"]
        env.reset(seed=11)
        wrong = env.step({"answer": "certainly not this"})
        assert wrong.done is True and wrong.reward == 0.0
        assert wrong.observation["expected"]
        env.reset(seed=11)
        right = env.step({"answer": wrong.observation["expected"]})
        assert right.done is True and right.reward == 1.0
        state = env.state()
        assert state["dataset"] == dataset and state["seed"] == 11 and state["score"] == 1.0


def test_bad_input_gets_a_clear_error_and_the_session_survives() -> None:
    with serve("reasoning_gym/leg_counting") as url, GenericEnvClient(base_url=url).sync() as env:
        env.reset(seed=1)
        with pytest.raises(RuntimeError, match=r"'answer': Field required.*VALIDATION_ERROR"):
            env.step({"guess": "4"})  # the field is `answer`
        with pytest.raises(RuntimeError, match=r"config: reasoning-gym rejected"):
            env.reset(seed=1, config={"no_such_option": 3})
        env.reset(seed=1)
        result = env.step({"answer": "4"})  # the same session goes on
        assert result.done is True
        with pytest.raises(RuntimeError, match=r"call reset\(\)"):
            env.step({"answer": "4"})  # one answer per question


async def test_rollout_engine_plays_a_dataset_with_a_scripted_solver() -> None:
    answers = {i["question"].strip(): str(i["answer"]) for i in sample_items("leg_counting", 8)}

    def solve(text: str) -> str:
        return next((a for q, a in answers.items() if q in text), "0")

    spec = ReasoningGymSpec("leg_counting", seed=0, vocabulary_samples=8)
    assert {"legs", "how"} <= set(spec.vocabulary)
    with serve("reasoning_gym/leg_counting") as url:
        batch = await play(spec, url, solve, episodes=16, group_size=2)
    assert batch.complete and len(batch.records) == 16
    assert [r.reward for r in batch.records] == [1.0] * 16
    assert all(r.num_turns == 1 for r in batch.records)
