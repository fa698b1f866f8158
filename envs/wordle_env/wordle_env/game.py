"""Wordle rules, in-process: per-letter feedback with duplicate letters handled as in the game.

Feedback letters: ``G`` right letter, right place; ``Y`` in the word elsewhere; ``B`` not (or
no more copies) in the word. Every guess costs a turn, including an invalid one (wrong length, or
not in the word list unless ``allow_any_word``), so every episode ends within ``max_turns``.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from .words import WORDS

WORD_LENGTH = 5
GUESS_PENALTY = 0.1


def score_guess(guess: str, answer: str) -> str:
    """``"GYBBG"``-style feedback of ``guess`` against ``answer`` (both lower case, same length)."""
    marks = ["B"] * len(guess)
    left = Counter(a for g, a in zip(guess, answer, strict=True) if g != a)
    for i, (g, a) in enumerate(zip(guess, answer, strict=True)):
        if g == a:
            marks[i] = "G"
        elif left[g] > 0:
            marks[i] = "Y"
            left[g] -= 1
    return "".join(marks)


def partial_credit(pattern: str) -> float:
    """0..1: a green counts 1, a yellow 0.5, over the word length."""
    return (pattern.count("G") + 0.5 * pattern.count("Y")) / len(pattern)


@dataclass
class WordleGame:
    answer: str
    max_turns: int = 6
    allow_any_word: bool = False
    guesses: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    solved: bool = False

    @classmethod
    def new(
        cls,
        seed: int | None = None,
        max_turns: int = 6,
        allow_any_word: bool = False,
        rng: random.Random | None = None,
    ) -> WordleGame:
        if (
            isinstance(max_turns, bool)
            or not isinstance(max_turns, int)
            or not 1 <= max_turns <= 20
        ):
            raise ValueError(
                f"max_turns must be an integer in 1..20 (6 is the game's), got {max_turns!r}"
            )
        r = random.Random(seed) if seed is not None else (rng or random.Random())
        return cls(answer=r.choice(WORDS), max_turns=max_turns, allow_any_word=bool(allow_any_word))

    @property
    def done(self) -> bool:
        return self.solved or len(self.guesses) >= self.max_turns

    @property
    def turns_left(self) -> int:
        return self.max_turns - len(self.guesses)

    @property
    def reward(self) -> float:
        """Solved in n guesses: ``1 - 0.1 (n - 1)``; otherwise half the best partial credit (< 0.5)."""
        if self.solved:
            return round(1.0 - GUESS_PENALTY * (len(self.guesses) - 1), 6)
        valid = [p for p in self.patterns if p]
        return round(0.5 * max((partial_credit(p) for p in valid), default=0.0), 6)

    def check(self, word: str) -> str | None:
        """Why ``word`` is not a valid guess, or None."""
        if len(word) != WORD_LENGTH or not word.isalpha():
            return f"a guess must be {WORD_LENGTH} letters a-z, got {word!r}"
        if not self.allow_any_word and word not in WORDS:
            return f"{word!r} is not in the word list"
        return None

    def guess(self, word: str) -> str:
        """Apply a guess; returns its pattern, or ``""`` for an invalid guess (which costs a turn)."""
        if self.done:
            raise RuntimeError("the game is over (done=True): call reset() to start a new one")
        word = word.strip().lower()
        self.guesses.append(word)
        if self.check(word) is not None:
            self.patterns.append("")
            return ""
        pattern = score_guess(word, self.answer)
        self.patterns.append(pattern)
        self.solved = pattern == "G" * WORD_LENGTH
        return pattern


def render(game: WordleGame) -> str:
    """The board as text: one ``word PATTERN`` line per guess, then what is left."""
    if not game.guesses:
        return f"guess the {WORD_LENGTH} letter word , you have {game.max_turns} guesses"
    word, pattern = game.guesses[-1], game.patterns[-1]
    line = f"{word} {' '.join(pattern)}" if pattern else f"{game.check(word)} (turn used)"
    if game.solved:
        return f"{line} , solved in {len(game.guesses)} guesses"
    if game.done:
        return f"{line} , no guesses left , the word was {game.answer}"
    return f"{line} , {game.turns_left} guesses left"
