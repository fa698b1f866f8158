"""This package's family in the openenv-train env catalog: ``textarena/<game id>``, the
single-player games and the two-player ones (served with seats)."""

from __future__ import annotations

from openenv_train.catalog import EnvEntry, EnvFamily, UnknownEnvError

from .games import GAME_IDS, OPPONENT_GAMES, TWO_PLAYER_GAME_IDS, base_game

FAMILY = EnvFamily(
    prefix="textarena",
    description="textarena's text games, one multi-turn env per game id: the single-player "
    "games, and the two-player games with seats",
    members_path="textarena_env.games:member_ids",
    entry_path="textarena_env.catalog:entry",
)


def entry(game: str) -> EnvEntry:
    """The catalog entry of ``textarena/<game id>``."""
    if game in TWO_PLAYER_GAME_IDS:
        against = " (or one seat vs random)" if base_game(game) in OPPONENT_GAMES else ""
        return EnvEntry(
            name=f"textarena/{game}",
            description=f"textarena {game} for two seats: one move per step by the seat to "
            f"move{against}; rewards per seat at the end.",
            app=f"textarena_env.server.apps:{game}",
            client_path="textarena_env.client:TextArenaSeatsEnv",
            action_path="textarena_env.models:MoveAction",
            observation_path="textarena_env.models:SeatedGameObservation",
            state_path="textarena_env.models:SeatedGameState",
            text_spec_path="textarena_env.text_spec:TextArenaSeatSpec",
        )
    if game not in GAME_IDS:
        raise UnknownEnvError(
            f"no textarena game {game!r} is served; `openenv-train envs` lists the "
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
