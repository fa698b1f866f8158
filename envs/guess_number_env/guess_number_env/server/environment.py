"""The guess-the-number env: typed ``GuessAction`` steps and an MCP ``guess`` tool, one game each.

Reset options (as keyword arguments of ``reset``): ``seed``, ``low``, ``high``, ``max_turns``
and ``show_range`` (append the still-possible range to the text). Everything is microseconds of
pure computation, so the methods are ``async`` and run on the event loop.
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

from ..game import GuessGame, render
from ..models import GuessAction, GuessNumberObservation, GuessNumberState


class GuessNumberEnvironment(MCPEnvironment):
    """Find a hidden integer with higher/lower feedback within a turn budget."""

    metadata = EnvironmentMetadata(
        name="guess_number_env",
        description="Guess a hidden integer in [low, high] with higher/lower feedback; reward "
        "1 - 0.1 per extra guess when found within max_turns, else 0.",
        version="0.1.0",
    )

    def __init__(self) -> None:
        self._rng = random.Random()
        self._game: GuessGame | None = None
        self._seed: int | None = None
        self._show_range = False
        self._episode_id: str | None = None

    async def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        low: int = 1,
        high: int = 100,
        max_turns: int = 7,
        show_range: bool = False,
    ) -> GuessNumberObservation:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed must be an integer >= 0 (or omitted), got {seed!r}")
        self._game = GuessGame.new(low, high, max_turns, seed=seed, rng=self._rng)
        self._seed, self._show_range = seed, bool(show_range)
        self._episode_id = episode_id or uuid.uuid4().hex
        return self._observe("start", reward=0.0)

    async def handle_action(self, action: GuessAction) -> GuessNumberObservation:  # type: ignore[override]
        return self._apply(action.guess)

    @tool
    async def guess(self, number: int) -> CallToolObservation:
        """Guess the hidden number; the answer says whether it is higher, lower or correct.

        Args:
            number: The number to try.
        """
        obs = self._apply(number)
        return CallToolObservation(
            tool_name="guess", result=obs.text, reward=obs.reward, done=obs.done
        )

    def _apply(self, number: int) -> GuessNumberObservation:
        game = self._game
        if game is None:
            raise NoEpisodeError("no game in progress: call reset() before guessing")
        feedback = game.guess(number)
        return self._observe(feedback, reward=game.reward if game.done else 0.0)

    def _observe(self, feedback: str, reward: float) -> GuessNumberObservation:
        game = self._game
        assert game is not None
        return GuessNumberObservation(
            feedback=feedback,  # type: ignore[arg-type]
            last_guess=game.guesses[-1] if game.guesses else None,
            low=game.low,
            high=game.high,
            lo=game.lo,
            hi=game.hi,
            turns_left=game.turns_left,
            text=render(game, feedback, self._show_range),
            done=game.done,
            reward=reward,
        )

    async def state(self) -> GuessNumberState:
        game = self._game
        if game is None:
            return GuessNumberState(episode_id=self._episode_id)
        return GuessNumberState(
            episode_id=self._episode_id,
            step_count=len(game.guesses),
            seed=self._seed,
            low=game.low,
            high=game.high,
            max_turns=game.max_turns,
            guesses=list(game.guesses),
            done=game.done,
            solved=game.solved,
            target=game.target if game.done else None,
        )

    async def close(self) -> None:
        self._game = None
