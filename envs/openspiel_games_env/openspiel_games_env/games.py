"""Which OpenSpiel games this family serves, loaded once per process.

Every registered game that is sequential (turn by turn), plays with two players and shows each
seat a string (an observation string or an information-state string) is a member. The list is
read from OpenSpiel's registry without loading any game.
"""

from __future__ import annotations

import functools
from typing import Any

#: games the docs and tests name first; every one is a member
FEATURED = ("kuhn_poker", "leduc_poker", "tic_tac_toe", "connect_four", "liars_dice")


@functools.cache
def game_names() -> tuple[str, ...]:
    """The member names: OpenSpiel's short names of its two-player sequential string games."""
    import pyspiel

    names = []
    for t in pyspiel.registered_games():
        if t.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL or not t.default_loadable:
            continue
        if not t.min_num_players <= 2 <= t.max_num_players:
            continue
        if t.provides_observation_string or t.provides_information_state_string:
            names.append(t.short_name)
    return tuple(sorted(names))


def game_members() -> list[str]:
    """The catalog's member list (``openspiel/<name>``)."""
    return list(game_names())


@functools.cache
def load(name: str) -> Any:
    """The two-player ``pyspiel.Game`` (OpenSpiel games are immutable and shared)."""
    import pyspiel

    if name not in game_names():
        raise ValueError(
            f"no two-player OpenSpiel game {name!r} is served; `openenv-train envs` lists the "
            "openspiel/<game> names"
        )
    game = pyspiel.load_game(name)
    if game.num_players() != 2:
        game = pyspiel.load_game(name, {"players": 2})
    return game


def is_perfect_information(game: Any) -> bool:
    import pyspiel

    return game.get_type().information == pyspiel.GameType.Information.PERFECT_INFORMATION


def is_deterministic_perfect_information(game: Any) -> bool:
    """No chance moves and nothing hidden: a position decides the game (tic-tac-toe, connect
    four), so it can be searched or walked exactly."""
    import pyspiel

    deterministic = game.get_type().chance_mode == pyspiel.GameType.ChanceMode.DETERMINISTIC
    return deterministic and is_perfect_information(game)


def seat_text(game: Any, state: Any, seat: int) -> tuple[str, str]:
    """``(text, info_state)`` of ``seat``: the observation string (else the information state)
    and the information state (empty where the game has none)."""
    t = game.get_type()
    info = state.information_state_string(seat) if t.provides_information_state_string else ""
    text = state.observation_string(seat) if t.provides_observation_string else info
    return text, info


def move_names(state: Any, player: int) -> tuple[list[int], list[str]]:
    """The legal action ids of ``player`` and their names."""
    ids = list(state.legal_actions(player))
    return ids, [state.action_to_string(player, a) for a in ids]


def parse_move(state: Any, player: int, move: str) -> int | None:
    """The legal action ``move`` names (a name, any case, or the id as digits); None if none."""
    ids, names = move_names(state, player)
    wanted = move.strip()
    for a, name in zip(ids, names, strict=True):
        if name == wanted:
            return a
    lower = wanted.lower()
    for a, name in zip(ids, names, strict=True):
        if name.lower() == lower:
            return a
    if wanted.isdigit() and int(wanted) in ids:
        return int(wanted)
    return None
