"""Guess-the-number as text for token-level policies (the rollout engine, env mixtures).

The model reads the env's own words (``guess a number from 1 to 16 , you have 5 guesses``) and
answers one number (``8<eos>``); the env's reply is appended (env_mask 0) until the number is found
or the guesses run out. Any other answer is an invalid action (reward ``invalid_action_reward``).
"""

from __future__ import annotations

import random
from typing import Any

from openenv_train import Action, StepResult
from openenv_train.rollout.spec import TextEnvSpec

from .game import GuessGame, render

#: The words of the env's texts (show_range on) for ranges inside 0..64.
WORDS: tuple[str, ...] = (
    *"guess a number from to , you have guesses the is higher lower than left".split(),
    *"correct solved in no was it out of range".split(),
)


def vocabulary(high: int) -> tuple[str, ...]:
    return (*WORDS, *(str(n) for n in range(0, max(high, 64) + 1)))


class GuessNumberTextSpec(TextEnvSpec):
    """``TextEnvSpec`` for ``guess_number_env``: games on ``[low, high]`` within ``max_turns``.

    ``seed``: when set, row ``r`` of batch ``c`` plays the game of seed ``seed + c * 1_000_003 + r``.
    """

    invalid_action_reward = 0.0  # the env's own floor: an unsolved game earns 0
    truncation_reward = 0.0

    def __init__(
        self,
        *,
        low: int = 1,
        high: int = 16,
        max_turns: int = 5,
        show_range: bool = True,
        seed: int | None = None,
    ) -> None:
        self.low, self.high, self.max_turns, self.show_range = low, high, max_turns, show_range
        self.seed = seed
        self.vocabulary = vocabulary(high)
        self._calls = -1

    @property
    def client_cls(self) -> Any:  # type: ignore[override]
        from .client import GuessNumberEnv

        return GuessNumberEnv

    def begin_run(self) -> None:
        self._calls += 1

    def reset_kwargs(self, prompt: Any, group: int, row: int) -> dict[str, Any]:
        game = dict(
            low=self.low, high=self.high, max_turns=self.max_turns, show_range=self.show_range
        )
        if self.seed is None:
            return game
        return {**game, "seed": self.seed + self._calls * 1_000_003 + row}

    def initial_prompt(self, result: StepResult[Any], prompt: Any) -> str:
        return result.observation.text

    def render(self, result: StepResult[Any]) -> str:
        return " " + result.observation.text

    def parse_action(self, text: str) -> Action | None:
        words = text.replace("<eos>", " ").split()
        if len(words) != 1 or not words[0].isdigit():
            return None
        from .models import GuessAction

        return GuessAction(guess=int(words[0]))

    def random_episode(self, rng: random.Random) -> list[tuple[str, str]]:
        """A game of uniform guesses among the numbers still possible, as chat turns: the format
        warm-up's data (reading the feedback, no search strategy)."""
        game = GuessGame.new(self.low, self.high, self.max_turns, seed=rng.getrandbits(32))
        turns = [("user", render(game, "start", self.show_range))]
        while True:
            number = rng.randint(game.lo, game.hi)
            turns.append(("assistant", str(number)))
            feedback = game.guess(number)
            if game.done:
                return turns
            turns.append(("user", " " + render(game, feedback, self.show_range)))
