"""The Wordle env: typed ``WordleAction`` steps and MCP tools (``guess``, ``board``) on one game.

Reset options: ``seed``, ``max_turns`` (6), ``allow_any_word`` (false: guesses must be in the
word list). Pure computation, so the methods are ``async`` and run on the event loop.
"""

from __future__ import annotations

import random
import uuid

from openenv_train import (
    CallToolObservation,
    EnvironmentMetadata,
    MCPEnvironment,
    NoEpisodeError,
    tool,
)

from ..game import WordleGame, render
from ..models import WordleAction, WordleObservation, WordleState


class WordleEnvironment(MCPEnvironment):
    """Find the five-letter word in six guesses from per-letter feedback."""

    metadata = EnvironmentMetadata(
        name="wordle_env",
        description="Wordle: guess the five-letter word; G/Y/B feedback per letter; reward "
        "1 - 0.1 per extra guess when solved, else half the best partial credit.",
        version="0.1.0",
    )

    def __init__(self) -> None:
        self._rng = random.Random()
        self._game: WordleGame | None = None
        self._seed: int | None = None
        self._episode_id: str | None = None

    async def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        max_turns: int = 6,
        allow_any_word: bool = False,
    ) -> WordleObservation:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed must be an integer >= 0 (or omitted), got {seed!r}")
        self._game = WordleGame.new(seed, max_turns, allow_any_word, rng=self._rng)
        self._seed, self._episode_id = seed, episode_id or uuid.uuid4().hex
        return self._observe(None)

    async def handle_action(self, action: WordleAction) -> WordleObservation:  # type: ignore[override]
        return self._apply(action.guess)

    @tool
    async def guess(self, word: str) -> CallToolObservation:
        """Guess the hidden five-letter word; the answer marks each letter G, Y or B.

        Args:
            word: A five-letter English word.
        """
        obs = self._apply(word)
        return CallToolObservation(
            tool_name="guess", result=obs.text, reward=obs.reward, done=obs.done
        )

    @tool
    async def board(self) -> dict:
        """The guesses so far with their feedback patterns and the turns left."""
        game = self._require()
        return {"guesses": game.guesses, "patterns": game.patterns, "turns_left": game.turns_left}

    def _require(self) -> WordleGame:
        if self._game is None:
            raise NoEpisodeError("no game in progress: call reset() before guessing")
        return self._game

    def _apply(self, word: str) -> WordleObservation:
        game = self._require()
        pattern = game.guess(word)
        return self._observe(None if pattern else game.check(game.guesses[-1]))

    def _observe(self, error: str | None) -> WordleObservation:
        game = self._require()
        return WordleObservation(
            guesses=list(game.guesses),
            patterns=list(game.patterns),
            turns_left=game.turns_left,
            error=error,
            text=render(game),
            done=game.done,
            reward=game.reward if game.done else 0.0,
        )

    async def state(self) -> WordleState:
        game = self._game
        if game is None:
            return WordleState(episode_id=self._episode_id)
        return WordleState(
            episode_id=self._episode_id,
            step_count=len(game.guesses),
            seed=self._seed,
            max_turns=game.max_turns,
            guesses=list(game.guesses),
            done=game.done,
            solved=game.solved,
            answer=game.answer if game.done else None,
        )

    async def close(self) -> None:
        self._game = None
