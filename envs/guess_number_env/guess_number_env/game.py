"""Guess-the-number rules, in-process (no I/O): the server, the baselines and the evaluators share it.

A hidden integer in ``[low, high]``; each guess gets ``higher``/``lower``/``correct``; the episode
ends when the number is found or ``max_turns`` guesses are spent. Binary search is optimal: it
never needs more than ``floor(log2(high - low + 1)) + 1`` guesses.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

#: A solve in ``n`` guesses earns ``1 - GUESS_PENALTY * (n - 1)`` (at least ``MIN_SOLVE_REWARD``);
#: a failed episode earns 0. Fewer guesses is strictly better, any solve beats no solve.
GUESS_PENALTY = 0.1
MIN_SOLVE_REWARD = 0.1
MAX_RANGE = 1_000_000


def solve_reward(guesses: int) -> float:
    return round(max(MIN_SOLVE_REWARD, 1.0 - GUESS_PENALTY * (guesses - 1)), 6)


def binary_search_budget(low: int, high: int) -> int:
    """The most guesses binary search needs on ``[low, high]``."""
    return int(math.floor(math.log2(high - low + 1))) + 1


def check_settings(low: int, high: int, max_turns: int) -> None:
    """Raise ``ValueError`` naming the bad reset option and the fix."""
    for name, value in (("low", low), ("high", high), ("max_turns", max_turns)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    if not 0 <= low < high <= MAX_RANGE:
        raise ValueError(
            f"low={low}, high={high}: need 0 <= low < high <= {MAX_RANGE} (e.g. low=1, high=100)"
        )
    if not 1 <= max_turns <= 64:
        raise ValueError(f"max_turns={max_turns}: use 1..64 guesses (e.g. 7 for 1..100)")


@dataclass
class GuessGame:
    """One episode. ``lo``/``hi`` is what the feedback so far leaves possible."""

    low: int
    high: int
    max_turns: int
    target: int
    guesses: list[int] = field(default_factory=list)
    solved: bool = False
    lo: int = 0
    hi: int = 0

    def __post_init__(self) -> None:
        self.lo, self.hi = self.low, self.high

    @classmethod
    def new(
        cls,
        low: int = 1,
        high: int = 100,
        max_turns: int = 7,
        seed: int | None = None,
        rng: random.Random | None = None,
    ) -> GuessGame:
        check_settings(low, high, max_turns)
        r = random.Random(seed) if seed is not None else (rng or random.Random())
        return cls(low=low, high=high, max_turns=max_turns, target=r.randint(low, high))

    @property
    def done(self) -> bool:
        return self.solved or len(self.guesses) >= self.max_turns

    @property
    def turns_left(self) -> int:
        return self.max_turns - len(self.guesses)

    @property
    def reward(self) -> float:
        return solve_reward(len(self.guesses)) if self.solved else 0.0

    def guess(self, number: int) -> str:
        """Apply one guess; returns ``correct``, ``higher``, ``lower`` or ``out_of_range``."""
        if self.done:
            raise RuntimeError("the game is over (done=True): call reset() to start a new one")
        self.guesses.append(number)
        if not self.low <= number <= self.high:
            return "out_of_range"
        if number == self.target:
            self.solved = True
            return "correct"
        if number < self.target:
            self.lo = max(self.lo, number + 1)
            return "higher"
        self.hi = min(self.hi, number - 1)
        return "lower"


def render(game: GuessGame, feedback: str, show_range: bool = False) -> str:
    """The text an LLM sees: space-separated words (a word-level tokenizer splits it cleanly)."""
    if feedback == "start":
        text = f"guess a number from {game.low} to {game.high} , you have {game.max_turns} guesses"
    elif feedback == "correct":
        return f"correct , solved in {len(game.guesses)} guesses"
    else:
        last = game.guesses[-1]
        if feedback == "out_of_range":
            text = f"{last} is out of range {game.low} to {game.high}"
        else:
            text = f"the number is {feedback} than {last}"
        if game.done:
            return f"{text} , no guesses left , the number was {game.target}"
        text += f" , {game.turns_left} guesses left"
    if show_range:
        text += f" , it is from {game.lo} to {game.hi}"
    return text


Strategy = Callable[[GuessGame, random.Random], int]


def binary_search(game: GuessGame, rng: random.Random) -> int:
    return (game.lo + game.hi) // 2


def random_guess(game: GuessGame, rng: random.Random) -> int:
    """A guesser that ignores the feedback: uniform over the whole range every turn."""
    return rng.randint(game.low, game.high)


def random_consistent(game: GuessGame, rng: random.Random) -> int:
    """Uniform over the numbers the feedback still allows (uses the feedback, no strategy)."""
    return rng.randint(game.lo, game.hi)


BASELINES: dict[str, Strategy] = {
    "random": random_guess,
    "random consistent": random_consistent,
    "binary search": binary_search,
}


def play(strategy: Strategy, games: int, seed: int, low: int, high: int, max_turns: int) -> dict:
    """Solve rate, mean guesses (solved games) and mean reward of ``strategy`` on seeded games."""
    rng = random.Random(seed ^ 0x5EED)
    solved = guesses = 0
    total = 0.0
    for i in range(games):
        game = GuessGame.new(low, high, max_turns, seed=seed + i)
        while not game.done:
            game.guess(strategy(game, rng))
        solved += game.solved
        guesses += len(game.guesses) if game.solved else 0
        total += game.reward
    return {
        "solve_rate": solved / games,
        "mean_guesses": guesses / solved if solved else float("nan"),
        "mean_reward": total / games,
    }
