"""This package's family in the openenv-train env catalog: ``textarena/<game id>``."""

from __future__ import annotations

from openenv_train.catalog import EnvEntry, EnvFamily, UnknownEnvError

from .games import game_ids

FAMILY = EnvFamily(
    prefix="textarena",
    description="textarena's single-player text games, one multi-turn env per game id",
    members_path="textarena_env.games:game_ids",
    entry_path="textarena_env.catalog:entry",
)


def entry(game: str) -> EnvEntry:
    """The catalog entry of ``textarena/<game id>``."""
    if game not in game_ids():
        raise UnknownEnvError(
            f"no single-player textarena game {game!r} is served; `openenv-train envs` lists the "
            "textarena/<game id> names"
        )
    return EnvEntry(
        name=f"textarena/{game}",
        description=f"textarena {game}: a single-player text game, one move per step "
        "(e.g. [5]); the game's reward at the end.",
        app=f"textarena_env.server.apps:{game}",
        client_path="textarena_env.client:TextArenaEnv",
        action_path="textarena_env.models:MoveAction",
        observation_path="textarena_env.models:GameObservation",
        state_path="textarena_env.models:TextArenaState",
        text_spec_path="textarena_env.text_spec:TextArenaSpec",
    )
