"""One textarena game per episode, played by a single player through typed ``MoveAction`` steps.

textarena games draw from Python's and NumPy's *global* random generators. So that a seed
replays the same game however many sessions share the process, every call into a game holds one
process-wide lock and runs on that session's own saved generator states. Games are plain Python,
so the methods are sync and run in the server's worker threads.
"""

from __future__ import annotations

import importlib.metadata
import random
import threading
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from openenv_train import Environment, EnvironmentMetadata, NoEpisodeError

from ..models import GameObservation, MoveAction, TextArenaState

PLAYER = 0
_GLOBAL_RANDOM = threading.Lock()
T = TypeVar("T")


def make_game(game: str) -> Any:
    """A fresh, unwrapped textarena game (``<id>-raw`` when textarena registers one)."""
    import textarena
    from textarena.envs.registration import ENV_REGISTRY

    raw = f"{game}-raw"
    return textarena.make(raw if raw in ENV_REGISTRY else game)


class IsolatedRandom:
    """A session's own Python and NumPy generator states, swapped in around each call into its
    game under the process-wide lock (textarena draws from the global generators)."""

    _random_states: tuple[Any, Any] | None = None

    def _isolated(self, call: Callable[[], T]) -> T:
        """Run ``call`` on this session's random generators (see the module docstring)."""
        with _GLOBAL_RANDOM:
            outer = random.getstate(), np.random.get_state()
            try:
                if self._random_states is not None:
                    random.setstate(self._random_states[0])
                    np.random.set_state(self._random_states[1])
                result = call()
                self._random_states = random.getstate(), np.random.get_state()
                return result
            finally:
                random.setstate(outer[0])
                np.random.set_state(outer[1])


class TextArenaEnvironment(
    IsolatedRandom, Environment[MoveAction, GameObservation, TextArenaState]
):
    """Play one single-player textarena game; reward = the game's own reward at the end."""

    def __init__(self, game: str) -> None:
        self.game = game
        self._rng = random.Random()
        self._env: Any = None
        self._random_states: tuple[Any, Any] | None = None
        self._state = TextArenaState(game=game)

    @classmethod
    def metadata_for(cls, game: str) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=f"textarena/{game}",
            description=f"textarena's {game}: a single-player text game, one move per step; "
            "the game's reward when it ends.",
            version=importlib.metadata.version("textarena"),
        )

    def get_metadata(self) -> EnvironmentMetadata:
        """``/metadata`` names this member of the family (the server builds one env to ask)."""
        return self.metadata_for(self.game)

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> GameObservation:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed must be an integer >= 0 (or omitted), got {seed!r}")
        seed = self._rng.randrange(2**31) if seed is None else seed
        self._random_states = None

        def start() -> Any:
            random.seed(seed)
            np.random.seed(seed % 2**32)
            env = make_game(self.game)
            env.reset(num_players=1, seed=seed)
            return env

        self._env = self._isolated(start)
        self._state = TextArenaState(
            episode_id=episode_id or uuid.uuid4().hex, game=self.game, seed=seed
        )
        return GameObservation(game=self.game, text=self._new_text(), reward=0.0)

    def step(self, action: MoveAction, **kwargs: Any) -> GameObservation:
        env = self._env
        if env is None:
            raise NoEpisodeError("no game in progress: call reset() before playing a move")
        done, _info = self._isolated(lambda: env.step(action.message))
        self._state.step_count += 1
        text = self._new_text()
        invalid = "invalid move" in text.lower()
        reward = 0.0
        if done:
            rewards, game_info = self._isolated(env.close)
            reward = float((rewards or {}).get(PLAYER, 0.0))
            info = (game_info or {}).get(PLAYER, {})
            invalid = bool(info.get("invalid_move", invalid))
            self._state.done, self._state.reward = True, reward
            self._state.info = {k: v for k, v in info.items() if isinstance(v, (str, int, float))}
            self._env = None
        return GameObservation(
            game=self.game,
            text=text,
            turn=self._state.step_count,
            invalid_move=invalid,
            done=bool(done),
            reward=reward,
        )

    def _new_text(self) -> str:
        """What the game told the player since the last move (its own echo of the move left out)."""
        _player, messages = self._env.get_observation()
        return "\n".join(str(m[1]) for m in messages or () if m[0] != PLAYER).strip()

    def state(self) -> TextArenaState:
        return self._state

    def close(self) -> None:
        self._env = None
