"""Which textarena games this package serves: the single-player ones that run offline.

textarena's registry mixes one- and many-player games, and some need downloads (nltk corpora,
game files) or an API key at run time. The served ids are every registered variant of the games
below, without textarena's ``-raw``/``-train`` wrapper variants (the env always plays the raw
game and renders it itself). ``GAME_IDS`` writes them out, so that listing the catalog does
not import textarena (seconds); a test keeps it equal to ``live_game_ids()``.
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


def live_game_ids() -> list[str]:
    """Every registered id of those games in the installed textarena, sorted."""
    from textarena.envs.registration import ENV_REGISTRY

    games = set(SINGLE_PLAYER_GAMES)
    return sorted(
        env_id
        for env_id in ENV_REGISTRY
        if env_id.split("-v", 1)[0] in games and not env_id.endswith(("-raw", "-train"))
    )


GAME_IDS = (
    "2048-v0",
    "2048-v0-10x10",
    "2048-v0-3x3",
    "2048-v0-5x5",
    "2048-v0-6x6",
    "2048-v0-8x8",
    "2048-v0-easy",
    "2048-v0-extreme",
    "2048-v0-hard",
    "2048-v0-mega-easy",
    "2048-v0-super-easy",
    "2048-v0-ultra-easy",
    "2048-v0-very-easy",
    "2048-v0-very-hard",
    "Bandit-v0",
    "Bandit-v0-hard",
    "Blackjack-v0",
    "Blackjack-v0-long",
    "Countdown-v0",
    "Crosswords-v0",
    "Crosswords-v0-hardcore",
    "Cryptarithm-v0",
    "FifteenPuzzle-v0",
    "FrozenLake-v0",
    "FrozenLake-v0-hardcore",
    "FrozenLake-v0-random",
    "GuessTheNumber-v0",
    "GuessTheNumber-v0-hardcore",
    "LightsOut-v0",
    "LogicPuzzle-v0",
    "LogicPuzzle-v0-hard",
    "Mastermind-v0",
    "Mastermind-v0-extreme",
    "Mastermind-v0-hard",
    "Minesweeper-v0",
    "Minesweeper-v0-hard",
    "Minesweeper-v0-medium",
    "Minesweeper-v0-small",
    "PegJump-v0",
    "RushHour-v0",
    "Secretary-v0",
    "Secretary-v0-long",
    "Slitherlink-v0",
    "Sokoban-v0",
    "Sokoban-v0-medium",
    "Sudoku-v0",
    "Sudoku-v0-easy",
    "Sudoku-v0-hard",
    "Sudoku-v0-medium",
    "Sudoku-v0-very-easy",
    "ThreeCardMonte-v0",
    "TowerOfHanoi-v0",
    "TowerOfHanoi-v0-extreme",
    "TowerOfHanoi-v0-hard",
    "TowerOfHanoi-v0-hardcore",
    "TowerOfHanoi-v0-medium",
)


def game_ids() -> list[str]:
    """Every served textarena id, sorted (``GuessTheNumber-v0``, ``Sudoku-v0-easy``, ...)."""
    return list(GAME_IDS)
