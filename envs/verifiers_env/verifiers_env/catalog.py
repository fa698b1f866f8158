"""This package's family in the openenv-train env catalog: ``verifiers/<env id>``."""

from __future__ import annotations

from openenv_train.catalog import EnvEntry, EnvFamily, UnknownEnvError

from .installed import is_installed

FAMILY = EnvFamily(
    prefix="verifiers",
    description="installed verifiers environments, scored by their rubrics",
    members_path="verifiers_env.installed:env_ids",
    entry_path="verifiers_env.catalog:entry",
)


def entry(env_id: str) -> EnvEntry:
    """The catalog entry of ``verifiers/<env id>`` (any installed verifiers environment)."""
    if not env_id or "." in env_id or not is_installed(env_id):
        raise UnknownEnvError(
            f"no verifiers environment {env_id!r} is installed (pip install it; its module "
            "must define load_environment); `openenv-train envs` lists the installed ones"
        )
    return EnvEntry(
        name=f"verifiers/{env_id}",
        description=f"verifiers {env_id}: answer one prompt of its dataset, scored by its rubric.",
        app=f"verifiers_env.server.apps:{env_id}",
        client_path="verifiers_env.client:VerifiersEnv",
        action_path="verifiers_env.models:AnswerAction",
        observation_path="verifiers_env.models:VerifiersObservation",
        state_path="verifiers_env.models:VerifiersState",
        text_spec_path="verifiers_env.text_spec:VerifiersSpec",
    )
