"""One two-player textarena game per session, with seats (the seats protocol page says how).

The session holds both seats (``reset()``: the client moves for ``current_player`` each step)
or one (``reset(seat=k, opponent="random")``: the server moves for the other seat until it is
seat ``k``'s turn). Every observation is one seat's view: what textarena told that seat since
its last turn, so hidden cards and private offers stay on the server.

Randomness: textarena games draw from Python's and NumPy's global generators, so every call into
a game runs under the process-wide lock of ``environment`` on this session's saved generator
states; the built-in opponent draws from the episode's own ``random.Random(seed)``. So
``(seed, seat, opponent, the client's moves)`` replays a game exactly: stateless HTTP
``/reset`` and ``/step`` take them back (``moves=[...]``).

Invalid moves: textarena lets a player resubmit once and then scores the mover -1 and the other
seat +1. Here, as in every seated env, the first invalid move ends the game: the mover gets -1
(textarena's lowest reward), the other seat 0 (``invalid_move``).

The random opponent: textarena has no legal-move list, but most games name the moves in the
text they show the seat to move (``Available Moves: '[0]', '[4]'``) or take moves of a fixed
form. The opponent draws candidate moves from that text (or from the game's own generator in
``games.CANDIDATE_MOVES``), in random order, and plays the first that a copy of the game
accepts. Games where that cannot work (free-text negotiation) are not in
``games.OPPONENT_GAMES`` and refuse ``opponent``.
"""

from __future__ import annotations

import copy
import importlib.metadata
import random
import re
import uuid
from typing import Any

import numpy as np

from openenv_train import Environment, EnvironmentMetadata, NoEpisodeError
from openenv_train.core.models import check_seat_reset

from ..games import CANDIDATE_MOVES, OPPONENT_GAMES, base_game
from ..models import MoveAction, SeatedGameObservation, SeatedGameState
from .environment import IsolatedRandom, make_game

NUM_PLAYERS = 2
LOSS = -1.0  # textarena's lowest reward: what an invalid move scores the mover
OPPONENTS = ("random",)
MAX_REPLAY_MOVES = 10_000
MAX_MOVE_CHARS = 4_000
_BRACKETED = re.compile(r"\[[^\[\]\n]{1,40}\]")


class TwoPlayerTextArenaEnvironment(
    IsolatedRandom, Environment[MoveAction, SeatedGameObservation, SeatedGameState]
):
    """Play one two-player textarena game; rewards per seat (the game's rewards at the end)."""

    def __init__(self, game: str) -> None:
        self.game = game
        self._seeds = random.Random()
        self._rng = random.Random(0)
        self._env: Any = None
        self._random_states: tuple[Any, Any] | None = None
        self._my_moves: list[str] = []
        self._invalid = False
        self._rewards: list[float] = []
        self._move_text: dict[int, str] = {}  # per seat: the newest text naming moves
        self._state = SeatedGameState(game=game, num_players=NUM_PLAYERS)

    @classmethod
    def metadata_for(cls, game: str) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=f"textarena/{game}",
            description=f"textarena's {game} for two seats: self-play (hold both seats) or one "
            "seat against a built-in random opponent; rewards per seat when it ends.",
            version=importlib.metadata.version("textarena"),
        )

    def get_metadata(self) -> EnvironmentMetadata:
        return self.metadata_for(self.game)

    # ---- episode ---------------------------------------------------------------------------

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        seat: int | None = None,
        opponent: str = "random",
        moves: list[str] | None = None,
    ) -> SeatedGameObservation:
        """Start a game. ``seat``: hold that seat only (the other plays as ``opponent``);
        ``moves``: replay the client's earlier moves of this seeded game first."""
        check_seat_reset(seed, seat, moves, num_players=NUM_PLAYERS, max_moves=MAX_REPLAY_MOVES)
        if seat is not None:
            check_opponent(self.game, opponent)
        seed = self._seeds.randrange(2**31) if seed is None else seed

        def start() -> Any:
            random.seed(seed)
            np.random.seed(seed % 2**32)
            env = make_game(self.game)
            env.reset(num_players=NUM_PLAYERS, seed=seed)
            # the seats rule: the first invalid move ends the game (no resubmission)
            env.state.error_allowance = 0
            return env

        self._random_states = None
        self._env = self._isolated(start)
        self._rng = random.Random(seed)
        self._my_moves, self._invalid, self._rewards, self._move_text = [], False, [], {}
        self._state = SeatedGameState(
            episode_id=episode_id or uuid.uuid4().hex,
            game=self.game,
            seed=seed,
            num_players=NUM_PLAYERS,
            held_seat=seat,
            opponent=None if seat is None else opponent,
        )
        self._sync_state()
        self._advance()
        for k, move in enumerate(moves or []):
            if self._state.done:
                raise ValueError(f"moves[{k}]: the game is already over")
            self._play(move)
        return self._observe(mover=None)

    def step(
        self,
        action: MoveAction,
        seed: int | None = None,
        seat: int | None = None,
        opponent: str = "random",
        moves: list[str] | None = None,
        **kwargs: Any,
    ) -> SeatedGameObservation:
        """One move for the seat to move. With ``moves`` (stateless HTTP), the game is first
        replayed from ``seed``, ``seat``, ``opponent`` and those moves."""
        if moves is not None:
            self.reset(seed=seed, seat=seat, opponent=opponent, moves=moves)
        if self._env is None:
            raise NoEpisodeError("no game in progress: call reset() before playing a move")
        if self._state.done:
            raise NoEpisodeError("the game is over: call reset() to play another")
        if len(action.message) > MAX_MOVE_CHARS:
            raise ValueError(f"message: at most {MAX_MOVE_CHARS} characters")
        mover = self._state.current_player
        self._play(action.message)
        return self._observe(mover=mover)

    @property
    def state(self) -> SeatedGameState:
        return self._state

    def close(self) -> None:
        self._env = None

    # ---- internals -------------------------------------------------------------------------

    def _play(self, move: str) -> None:
        """``move`` for the seat to move, then the opponent's moves until a held seat moves."""
        self._my_moves.append(move)
        self._apply(move)
        self._advance()

    def _apply(self, move: str) -> None:
        env, mover = self._env, self._state.current_player
        assert mover is not None
        self._isolated(lambda: env.step(move))  # some games return None on a bad move
        self._state.step_count += 1
        self._state.history.append((mover, move))
        if invalid_after(env, mover):
            self._invalid = True
            self._rewards = [LOSS if p == mover else 0.0 for p in range(NUM_PLAYERS)]
        elif env.state.done:
            rewards = env.state.rewards or {}
            self._rewards = [float(rewards.get(p, 0.0)) for p in range(NUM_PLAYERS)]
        self._sync_state()

    def _advance(self) -> None:
        """Play the opponent's seat until the held seat is to move (or the game is over)."""
        held = self._state.held_seat
        while held is not None and not self._state.done and self._state.current_player != held:
            self._apply(self._opponent_move())

    def _opponent_move(self) -> str:
        """The random opponent: a random move among those a copy of the game accepts."""
        seat = self._state.current_player
        assert seat is not None
        candidates = self._candidates(seat)
        self._rng.shuffle(candidates)
        env = self._env

        def first_legal() -> str | None:
            saved = random.getstate(), np.random.get_state()
            try:
                for move in candidates:
                    trial = copy.deepcopy(env)
                    try:
                        trial.step(move)
                    except Exception:  # a textarena bug on this move: try another
                        continue
                    if not invalid_after(trial, seat):
                        return move
                    random.setstate(saved[0])
                    np.random.set_state(saved[1])
                return None
            finally:
                random.setstate(saved[0])
                np.random.set_state(saved[1])

        move = self._isolated(first_legal)
        if move is None:  # every candidate refused: textarena scores it as the seat's loss
            return candidates[0] if candidates else "[]"
        return move

    def _candidates(self, seat: int) -> list[str]:
        """Moves worth trying for ``seat``: the game's generator, else the bracketed moves the
        game last showed that seat (the newest text naming any)."""
        generate = CANDIDATE_MOVES.get(base_game(self.game))
        if generate is not None:
            return list(generate(self._env.state.game_state, seat))
        self._seat_text(seat)  # the opponent reads its news (and the queue stays short)
        return list(dict.fromkeys(_BRACKETED.findall(self._move_text.get(seat, ""))))

    def _sync_state(self) -> None:
        st, env = self._state, self._env
        st.done = self._invalid or bool(env.state.done)
        st.current_player = None if st.done else int(env.state.current_player_id)
        st.returns = list(self._rewards) if st.done else []
        if st.done:
            info = (env.state.game_info or {}).get(0, {})
            st.info = {k: v for k, v in info.items() if isinstance(v, (str, int, float))}

    def _seat_text(self, seat: int) -> str:
        """What the game told ``seat`` since its last view (its own echoed moves left out)."""
        env = self._env
        messages = env.state.observations.get(seat, [])
        env.state.observations[seat] = []
        roles = env.state.role_mapping or {}
        lines = []
        for from_id, message, *_ in messages:
            if from_id == seat:
                continue
            if 0 <= from_id < NUM_PLAYERS:
                lines.append(f"[{roles.get(from_id, f'Player {from_id}')}] {message}")
            else:
                lines.append(str(message))
        text = "\n".join(lines).strip()
        if _BRACKETED.search(text):
            self._move_text[seat] = text
        return text

    def _observe(self, mover: int | None) -> SeatedGameObservation:
        st = self._state
        done, to_move = st.done, st.current_player
        if st.held_seat is not None:
            seat = st.held_seat
        else:
            seat = to_move if not done else mover
        seat = 0 if seat is None else seat
        rewards = list(self._rewards) if done else [0.0] * NUM_PLAYERS
        if mover is None and not done:
            rewards = []
        reward_seat = st.held_seat if st.held_seat is not None else mover
        reward = rewards[reward_seat] if rewards and reward_seat is not None else 0.0
        return SeatedGameObservation(
            game=self.game,
            num_players=NUM_PLAYERS,
            current_player=to_move,
            seat=seat,
            rewards=rewards,
            text=self._seat_text(seat),
            turn=st.step_count,
            my_moves=list(self._my_moves),
            invalid_move=self._invalid,
            done=done,
            reward=reward,
        )


def invalid_after(env: Any, mover: int) -> bool:
    """Whether ``mover``'s last move in ``env`` was invalid (textarena flags it in the mover's
    game info, or counts an error where a game still allows a resubmission)."""
    state = env.state
    info = (state.game_info or {}).get(mover, {})
    return bool(info.get("invalid_move")) or bool(getattr(state, "error_count", 0))


def check_opponent(game: str, opponent: Any) -> None:
    """A clear error for an ``opponent`` this game cannot have."""
    if opponent not in OPPONENTS:
        raise ValueError(f"opponent must be one of {', '.join(OPPONENTS)}, got {opponent!r}")
    if base_game(game) not in OPPONENT_GAMES:
        raise ValueError(
            f"opponent: textarena {game} has no built-in opponent (its moves are free text or "
            "not always listed in what it shows a seat); reset without `seat` to hold both seats and "
            "play the other seat yourself"
        )
