"""Built-in opponents that hold the seats a client does not: ``random``, ``scripted``, ``solver``,
``punisher``.

- ``random``: a uniformly random legal move.
- ``scripted``: in deterministic perfect-information games (tic-tac-toe, connect four...), a move
  that wins at once, else one that leaves the other seat no winning reply, else a random one; in
  games with chance or hidden information, always the first legal move (in poker: check/call).
- ``solver``: in perfect-information games, OpenSpiel's MCTS-Solver (1,000 simulations, proven
  wins and losses exact); in Kuhn and Leduc poker, an approximate Nash equilibrium by CFR+ (its
  NashConv below 0.001 and 0.03), computed once per process.
- ``punisher``: in deterministic perfect-information games small enough to solve exactly
  (tic-tac-toe: 5,478 positions), a move that keeps a won game won whenever the game is won for
  it, else a random legal move. Every move that gives the game away is punished, and the rest of
  the game is as varied as random play: the opponent a "never lose" policy trains against.

Every opponent draws from the episode's own ``random.Random``, so a seed replays the game.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any

from .games import is_deterministic_perfect_information, is_perfect_information, load

OPPONENTS = ("random", "scripted", "solver", "punisher")
#: CFR+ iterations per game with an equilibrium solver
CFR_GAMES = {"kuhn_poker": 300, "leduc_poker": 100}
MCTS_SIMULATIONS = 1000
#: positions the punisher's exact solve may visit before the game counts as too big for it
MAX_SOLVED_POSITIONS = 200_000

Opponent = Callable[[Any], int]


def check_opponent(kind: str, game_name: str, game: Any) -> None:
    """Raise ``ValueError`` naming the choices when ``kind`` cannot play ``game``."""
    if kind not in OPPONENTS:
        raise ValueError(f"opponent must be one of {', '.join(OPPONENTS)}, got {kind!r}")
    if kind == "solver" and not (is_perfect_information(game) or game_name in CFR_GAMES):
        raise ValueError(
            f"opponent 'solver' plays perfect-information games and {', '.join(CFR_GAMES)}; "
            f"{game_name} has hidden information: use opponent 'random' or 'scripted'"
        )
    if kind == "punisher" and solved_values(game_name) is None:
        raise ValueError(
            f"opponent 'punisher' plays deterministic perfect-information games it can solve "
            f"exactly (at most {MAX_SOLVED_POSITIONS:,} positions); {game_name} is not one: use "
            "opponent 'solver' or 'scripted'"
        )


def make_opponent(kind: str, game_name: str, game: Any, rng: random.Random) -> Opponent:
    """The move function of a ``kind`` opponent in ``game`` (checked by :func:`check_opponent`)."""
    check_opponent(kind, game_name, game)
    if kind == "random":
        return lambda state: rng.choice(state.legal_actions())
    if kind == "scripted":
        return functools.partial(_scripted, game, rng)
    if kind == "punisher":
        return functools.partial(_punish, solved_values(game_name), rng)
    if game_name in CFR_GAMES:
        return functools.partial(_from_policy, _equilibrium(game_name), rng)
    return _mcts(game, rng.randrange(2**31))


def _scripted(game: Any, rng: random.Random, state: Any) -> int:
    legal = state.legal_actions()
    if not is_deterministic_perfect_information(game):
        return legal[0]
    me = state.current_player()
    safe = []
    for a in legal:
        child = state.child(a)
        if child.is_terminal():
            if child.returns()[me] > 0:
                return a
            safe.append(a)
            continue
        them = child.current_player()
        loses = any(
            (g := child.child(b)).is_terminal() and g.returns()[them] > 0
            for b in child.legal_actions()
        )
        if not loses:
            safe.append(a)
    return rng.choice(safe or legal)


def _punish(values: dict[str, float], rng: random.Random, state: Any) -> int:
    me, legal = state.current_player(), state.legal_actions()
    sign = 1 if me == 0 else -1
    winning = [a for a in legal if sign * values[position_key(state.child(a))] > 0]
    return rng.choice(winning or legal)


def position_key(state: Any) -> str:
    """The key of ``state``'s position in :func:`solved_values` (the board and who moves)."""
    return f"{state.current_player()}|{state}"


@functools.cache
def solved_values(game_name: str) -> dict[str, float] | None:
    """Seat 0's return under perfect play from every reachable position, or ``None`` when the
    game has chance, hidden information or more than ``MAX_SOLVED_POSITIONS`` positions."""
    game = load(game_name)
    if not is_deterministic_perfect_information(game):
        return None
    values: dict[str, float] = {}

    def value(state: Any) -> float:
        key = position_key(state)
        if key not in values:
            if len(values) >= MAX_SOLVED_POSITIONS:
                raise OverflowError
            if state.is_terminal():
                values[key] = state.returns()[0]
            else:
                pick = max if state.current_player() == 0 else min
                values[key] = pick(value(state.child(a)) for a in state.legal_actions())
        return values[key]

    try:
        value(game.new_initial_state())
    except (OverflowError, RecursionError):
        return None
    return values


@functools.cache
def _equilibrium(game_name: str) -> Any:
    import pyspiel

    solver = pyspiel.CFRPlusSolver(load(game_name))
    for _ in range(CFR_GAMES[game_name]):
        solver.evaluate_and_update_policy()
    return solver.tabular_average_policy()  # a copy: the solver may go


def _from_policy(policy: Any, rng: random.Random, state: Any) -> int:
    probs = policy.get_state_policy(state.information_state_string())
    actions, weights = zip(*probs, strict=True)
    return rng.choices(actions, weights=weights)[0]


def _mcts(game: Any, seed: int) -> Opponent:
    import pyspiel

    evaluator = pyspiel.RandomRolloutEvaluator(1, seed)
    bot = pyspiel.MCTSBot(game, evaluator, 2.0, MCTS_SIMULATIONS, 100, True, seed, False)
    return bot.step
