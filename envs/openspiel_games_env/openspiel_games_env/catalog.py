"""This package's family in the openenv-train env catalog: ``openspiel/<game>``."""

from __future__ import annotations

from openenv_train.catalog import EnvEntry, EnvFamily, UnknownEnvError

from .games import game_names

FAMILY = EnvFamily(
    prefix="openspiel",
    description="OpenSpiel's two-player games with seats: self-play or one seat vs a built-in "
    "opponent, one env per game",
    members_path="openspiel_games_env.games:game_members",
    entry_path="openspiel_games_env.catalog:entry",
)


def entry(game: str) -> EnvEntry:
    """The catalog entry of ``openspiel/<game>``."""
    if game not in game_names():
        raise UnknownEnvError(
            f"no two-player OpenSpiel game {game!r} is served; `openenv-train envs` lists the "
            "openspiel/<game> names"
        )
    return EnvEntry(
        name=f"openspiel/{game}",
        description=f"OpenSpiel {game} for two seats: one move per step by the seat to move "
        "(or one seat vs random/scripted/solver); rewards per seat.",
        app=f"openspiel_games_env.server.apps:{game}",
        client_path="openspiel_games_env.client:OpenSpielEnv",
        action_path="openspiel_games_env.models:GameAction",
        observation_path="openspiel_games_env.models:GameObservation",
        state_path="openspiel_games_env.models:GameState",
        text_spec_path="openspiel_games_env.text_spec:SeatTextSpec",
    )
