"""This package's family in the openenv-train env catalog: ``reasoning_gym/<dataset>`` for every dataset."""

from __future__ import annotations

from openenv_train.catalog import EnvEntry, EnvFamily, UnknownEnvError

from .names import dataset_names

FAMILY = EnvFamily(
    prefix="reasoning_gym",
    description="reasoning-gym's procedural datasets, one single-answer env each",
    members_path="reasoning_gym_env.names:dataset_names",
    entry_path="reasoning_gym_env.catalog:entry",
)


def entry(dataset: str) -> EnvEntry:
    """The catalog entry of ``reasoning_gym/<dataset>``."""
    if dataset not in dataset_names():
        raise UnknownEnvError(
            f"reasoning-gym has no dataset {dataset!r}; `openenv-train envs` lists the "
            "reasoning_gym/<dataset> names"
        )
    return EnvEntry(
        name=f"reasoning_gym/{dataset}",
        description=f"reasoning-gym {dataset}: answer one generated question, scored by the "
        "dataset's score_answer (reward 0..1).",
        app=f"reasoning_gym_env.server.apps:{dataset}",
        client_path="reasoning_gym_env.client:ReasoningGymEnv",
        action_path="reasoning_gym_env.models:AnswerAction",
        observation_path="reasoning_gym_env.models:QuestionObservation",
        state_path="reasoning_gym_env.models:ReasoningGymState",
        text_spec_path=f"reasoning_gym_env.specs:{dataset}",
    )
