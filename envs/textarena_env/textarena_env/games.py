"""Which textarena games this package serves: the single-player ones and the two-player ones
(served with seats) that run offline.

textarena's registry mixes one- and many-player games, and some need downloads (nltk corpora,
game files) or an API key at run time. The served ids are every registered variant of the games
below, without textarena's ``-raw``/``-train`` wrapper variants (the env always plays the raw
game and renders it itself). ``GAME_IDS`` and ``TWO_PLAYER_GAME_IDS`` write them out, so that
listing the catalog does not import textarena (seconds); tests keep them equal to
``live_game_ids()`` and ``live_two_player_game_ids()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
    """Every served single-player textarena id, sorted (``GuessTheNumber-v0``, ...)."""
    return list(GAME_IDS)


#: two-player games (the id's first part) that start and play offline, served with seats
#: (``server.seats``). Left out: Chess, Checkers, ReverseTicTacToe, IteratedStagHunt,
#: UltimateTexasHoldem (textarena 0.7.4's code does not compile on Python < 3.12), Stratego
#: (crashes on some legal moves), the word games (nltk downloads), the LLM-judged ones (an API
#: key), UsedCarNegotiation and ScorableGames (files missing from the wheel), and the games
#: on textarena's free-for-all state (LiarsDice, Poker, Snake, ...: another invalid-move rule).
TWO_PLAYER_GAMES = (
    "Alquerque",
    "Battleship",
    "Breakthrough",
    "Briscola",
    "Chopsticks",
    "ColonelBlotto",
    "ConnectFour",
    "Crusade",
    "GameOfPureStrategy",
    "GermanWhist",
    "Golf",
    "HighSociety",
    "IndianPoker",
    "IteratedMatchingPennies",
    "IteratedPrisonersDilemma",
    "IteratedRockPaperScissors",
    "IteratedTwoThirdsAverage",
    "IteratedUltimatumGame",
    "KuhnPoker",
    "LinesOfAction",
    "MemoryGame",
    "NewRecruit",
    "Nim",
    "Othello",
    "PigDice",
    "QuantumTicTacToe",
    "SimpleBlindAuction",
    "SimpleNegotiation",
    "SimpleTak",
    "SpiteAndMalice",
    "Tak",
    "TicTacToe",
    "TruthAndDeception",
    "TwoDollar",
    "UltimateTicTacToe",
    "WildTicTacToe",
)


def _connect_four(game_state: dict[str, Any], seat: int) -> list[str]:
    return [f"[col {c}]" for c in range(len(game_state["board"][0]))]


def _nim(game_state: dict[str, Any], seat: int) -> list[str]:
    piles = game_state["piles"]
    return [f"[{i} {q}]" for i, n in enumerate(piles) for q in range(1, n + 1)]


def _chopsticks(game_state: dict[str, Any], seat: int) -> list[str]:
    attacks = [f"[attack {a} {b}]" for a in (0, 1) for b in (0, 1)]
    return attacks + [f"[split {a} {b}]" for a in range(5) for b in range(5)]


def _battleship(game_state: dict[str, Any], seat: int) -> list[str]:
    board = game_state["tracking_board"]
    size = len(board[seat] if isinstance(board, dict) else board)
    return [f"[{chr(ord('A') + r)}{c}]" for r in range(size) for c in range(size)]


def _othello(game_state: dict[str, Any], seat: int) -> list[str]:
    size = len(game_state["board"])  # the -hard variant does not list the valid moves
    return [f"[{r}, {c}]" for r in range(size) for c in range(size)]


#: moves to try for games whose text does not list them (the others: the bracketed moves in
#: the text the game last showed the seat, e.g. ``Available Moves: '[0]', '[4]'``)
CANDIDATE_MOVES: dict[str, Callable[[dict[str, Any], int], list[str]]] = {
    "Battleship": _battleship,
    "Chopsticks": _chopsticks,
    "ConnectFour": _connect_four,
    "Nim": _nim,
    "Othello": _othello,
}

#: games with the built-in random opponent (``reset(seat=k, opponent="random")``): random play
#: finishes them. The others' moves are free text or not listed in what they show a seat.
OPPONENT_GAMES = frozenset(
    {
        "Battleship",
        "Chopsticks",
        "ConnectFour",
        "Crusade",
        "GameOfPureStrategy",
        "HighSociety",
        "IndianPoker",
        "IteratedMatchingPennies",
        "IteratedPrisonersDilemma",
        "IteratedRockPaperScissors",
        "KuhnPoker",
        "MemoryGame",
        "Nim",
        "Othello",
        "PigDice",
        "SimpleBlindAuction",
        "SimpleTak",
        "TicTacToe",
        "UltimateTicTacToe",
        "WildTicTacToe",
    }
)


def base_game(game_id: str) -> str:
    """The game an id is a variant of: ``Othello-v0-small`` -> ``Othello``."""
    return game_id.split("-v", 1)[0]


def live_two_player_game_ids() -> list[str]:
    """Every registered id of the two-player games in the installed textarena, sorted."""
    from textarena.envs.registration import ENV_REGISTRY

    games = set(TWO_PLAYER_GAMES)
    return sorted(
        env_id
        for env_id in ENV_REGISTRY
        if base_game(env_id) in games and not env_id.endswith(("-raw", "-train"))
    )


TWO_PLAYER_GAME_IDS = (
    "Alquerque-v0",
    "Battleship-v0",
    "Battleship-v0-extreme",
    "Battleship-v0-large",
    "Battleship-v0-standard",
    "Breakthrough-v0",
    "Breakthrough-v0-blind",
    "Breakthrough-v0-large",
    "Breakthrough-v0-long",
    "Breakthrough-v0-small",
    "Breakthrough-v0-tiny",
    "Briscola-v0",
    "Chopsticks-v0",
    "Chopsticks-v0-long",
    "Chopsticks-v0-medium",
    "ColonelBlotto-v0",
    "ColonelBlotto-v0-extreme",
    "ColonelBlotto-v0-large",
    "ColonelBlotto-v0-small",
    "ConnectFour-v0",
    "ConnectFour-v0-blind",
    "ConnectFour-v0-large",
    "Crusade-v0",
    "GameOfPureStrategy-v0",
    "GermanWhist-v0",
    "Golf-v0",
    "Golf-v0-medium",
    "HighSociety-v0",
    "IndianPoker-v0",
    "IndianPoker-v0-extreme",
    "IndianPoker-v0-long",
    "IndianPoker-v0-medium",
    "IndianPoker-v0-short",
    "IteratedMatchingPennies-v0",
    "IteratedPrisonersDilemma-v0",
    "IteratedRockPaperScissors-v0",
    "IteratedTwoThirdsAverage-v0",
    "IteratedUltimatumGame-v0",
    "IteratedUltimatumGame-v0-alternate",
    "KuhnPoker-v0",
    "KuhnPoker-v0-extreme",
    "KuhnPoker-v0-long",
    "KuhnPoker-v0-medium",
    "KuhnPoker-v0-short",
    "LinesOfAction-v0",
    "MemoryGame-v0",
    "MemoryGame-v0-hard",
    "MemoryGame-v0-medium",
    "NewRecruit-v0",
    "Nim-v0",
    "Nim-v0-large",
    "Nim-v0-medium",
    "Othello-v0",
    "Othello-v0-big",
    "Othello-v0-hard",
    "Othello-v0-huge",
    "Othello-v0-small",
    "Othello-v0-tiny",
    "PigDice-v0",
    "PigDice-v0-100",
    "PigDice-v0-150",
    "PigDice-v0-200",
    "PigDice-v0-250",
    "PigDice-v0-300",
    "PigDice-v0-350",
    "PigDice-v0-400",
    "PigDice-v0-450",
    "PigDice-v0-50",
    "PigDice-v0-500",
    "PigDice-v0-long",
    "PigDice-v0-short",
    "QuantumTicTacToe-v0",
    "SimpleBlindAuction-v0",
    "SimpleBlindAuction-v0-quick",
    "SimpleBlindAuction-v0-rich",
    "SimpleNegotiation-v0",
    "SimpleNegotiation-v0-long",
    "SimpleNegotiation-v0-short",
    "SimpleTak-v0",
    "SimpleTak-v0-extreme",
    "SimpleTak-v0-large",
    "SimpleTak-v0-medium",
    "SpiteAndMalice-v0",
    "Tak-v0",
    "Tak-v0-hard",
    "Tak-v0-medium",
    "TicTacToe-v0",
    "TruthAndDeception-v0",
    "TruthAndDeception-v0-extreme",
    "TruthAndDeception-v0-long",
    "TwoDollar-v0",
    "UltimateTicTacToe-v0",
    "WildTicTacToe-v0",
)


def two_player_game_ids() -> list[str]:
    """Every served two-player textarena id, sorted (``KuhnPoker-v0``, ``TicTacToe-v0``, ...)."""
    return list(TWO_PLAYER_GAME_IDS)


def member_ids() -> list[str]:
    """The catalog's members (``textarena/<id>``): the single- and the two-player games."""
    return sorted([*GAME_IDS, *TWO_PLAYER_GAME_IDS])
