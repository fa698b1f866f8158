"""Built-in opponents that hold the seats a client does not: ``random``, ``scripted``, ``solver``.

- ``random``: a uniformly random legal move.
- ``scripted``: in deterministic perfect-information games (tic-tac-toe, connect four...), a move
  that wins at once, else one that leaves the other seat no winning reply, else a random one; in
  games with chance or hidden information, always the first legal move (in poker: check/call).
- ``solver``: in perfect-information games, OpenSpiel's MCTS-Solver (1,000 simulations, proven
  wins and losses exact); in Kuhn and Leduc poker, an approximate Nash equilibrium by CFR+ (its
  NashConv below 0.001 and 0.03), computed once per process.

Every opponent draws from the episode's own ``random.Random``, so a seed replays the game.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any

from .games import is_perfect_information, load

OPPONENTS = ("random", "scripted", "solver")
#: CFR+ iterations per game with an equilibrium solver
CFR_GAMES = {"kuhn_poker": 300, "leduc_poker": 100}
MCTS_SIMULATIONS = 1000

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


def make_opponent(kind: str, game_name: str, game: Any, rng: random.Random) -> Opponent:
    """The move function of a ``kind`` opponent in ``game`` (checked by :func:`check_opponent`)."""
    check_opponent(kind, game_name, game)
    if kind == "random":
        return lambda state: rng.choice(state.legal_actions())
    if kind == "scripted":
        return functools.partial(_scripted, game, rng)
    if game_name in CFR_GAMES:
        return functools.partial(_from_policy, _equilibrium(game_name), rng)
    return _mcts(game, rng.randrange(2**31))


def _scripted(game: Any, rng: random.Random, state: Any) -> int:
    import pyspiel

    legal = state.legal_actions()
    deterministic = game.get_type().chance_mode == pyspiel.GameType.ChanceMode.DETERMINISTIC
    if not (deterministic and is_perfect_information(game)):
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
