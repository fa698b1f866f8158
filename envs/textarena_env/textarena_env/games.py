"""Which textarena games this package serves: the single-player ones that run offline.

textarena's registry mixes one- and many-player games, and some need downloads (nltk corpora,
game files) or an API key at run time. The served ids are every registered variant of the games
below, without textarena's ``-raw``/``-train`` wrapper variants (the env always plays the raw
game and renders it itself).
"""

from __future__ import annotations

#: single-player games (the id's first part) that start and play offline
SINGLE_PLAYER_GAMES = (
    "2048",
    "Bandit",
    "Blackjack",
    "Countdown",
    "Crosswords",
    "Cryptarithm",
    "FifteenPuzzle",
    "FrozenLake",
    "GuessTheNumber",
    "LightsOut",
    "LogicPuzzle",
    "Mastermind",
    "Minesweeper",
    "PegJump",
    "RushHour",
    "Secretary",
    "Slitherlink",
    "Sokoban",
    "Sudoku",
    "ThreeCardMonte",
    "TowerOfHanoi",
)


def game_ids() -> list[str]:
    """Every served textarena id, sorted (``GuessTheNumber-v0``, ``Sudoku-v0-easy``, ...)."""
    from textarena.envs.registration import ENV_REGISTRY

    games = set(SINGLE_PLAYER_GAMES)
    return sorted(
        env_id
        for env_id in ENV_REGISTRY
        if env_id.split("-v", 1)[0] in games and not env_id.endswith(("-raw", "-train"))
    )
