"""One OpenSpiel game per session, with seats.

The session holds every seat (``reset()``: the client moves for ``current_player`` each step)
or one (``reset(seat=k, opponent=...)``: the server moves for the other seats until it is
seat ``k``'s turn, so each step is one of the client's moves). Chance nodes are sampled from the
episode's seeded generator and the built-in opponents draw from it too, so ``(seed, seat,
opponent, the client's moves)`` replays a game exactly: stateless HTTP ``/reset`` and ``/step``
take them back (``moves=[...]``) where every request gets a fresh env.

``openings=k`` starts the game after ``k`` random moves (drawn from the seeded generator, both
seats' alike; fewer where no move is left that keeps the game open and leaves the next mover no
move that ends it, so every seat still moves): exploring starts, so training sees positions
from all through the game and not only the empty board, and the games of one seed share it.

An illegal move ends the game: the mover gets the game's lowest utility, the others 0
(``invalid_move``), the way a model's unreadable answer is scored in training.
"""

from __future__ import annotations

import importlib.metadata
import random
import uuid
from typing import Any

from openenv_train import Environment, EnvironmentMetadata, NoEpisodeError
from openenv_train.core.models import check_seat_reset

from ..games import load, move_names, parse_move, seat_text
from ..models import MAX_OPENINGS, GameAction, GameObservation, GameState
from ..opponents import make_opponent

MAX_REPLAY_MOVES = 10_000


class OpenSpielEnvironment(Environment[GameAction, GameObservation, GameState]):
    """Play one two-player OpenSpiel game; rewards per seat (the game's returns at the end)."""

    def __init__(self, game: str) -> None:
        self.game_name = game
        self.game = load(game)
        self._seeds = random.Random()
        self._rng = random.Random(0)
        self._spiel: Any = None
        self._opponent: Any = None
        self._my_moves: list[str] = []
        self._invalid = False
        self._state = GameState(game=game, num_players=self.game.num_players())

    @classmethod
    def metadata_for(cls, game: str) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=f"openspiel/{game}",
            description=f"OpenSpiel's {game} for two seats: self-play (hold both seats) or one "
            "seat against a built-in opponent (random, scripted, solver).",
            version=importlib.metadata.version("open_spiel"),
        )

    def get_metadata(self) -> EnvironmentMetadata:
        return self.metadata_for(self.game_name)

    # ---- episode ---------------------------------------------------------------------------

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        seat: int | None = None,
        opponent: str = "random",
        moves: list[str] | None = None,
        openings: int = 0,
    ) -> GameObservation:
        """Start a game. ``seat``: hold that seat only (the others play as ``opponent``);
        ``moves``: replay the client's earlier moves of this seeded game first; ``openings``:
        random moves played before anyone holds a move (see the module docstring)."""
        n = self.game.num_players()
        check_seat_reset(seed, seat, moves, num_players=n, max_moves=MAX_REPLAY_MOVES)
        if type(openings) is not int or not 0 <= openings <= MAX_OPENINGS:
            raise ValueError(f"openings must be an integer 0..{MAX_OPENINGS}, got {openings!r}")
        seed = self._seeds.randrange(2**31) if seed is None else seed
        self._rng = random.Random(seed)
        self._opponent = (
            None if seat is None else make_opponent(opponent, self.game_name, self.game, self._rng)
        )
        self._spiel = self.game.new_initial_state()
        self._my_moves, self._invalid = [], False
        self._state = GameState(
            episode_id=episode_id or uuid.uuid4().hex,
            game=self.game_name,
            seed=seed,
            num_players=n,
            held_seat=seat,
            opponent=None if seat is None else opponent,
            openings=openings,
        )
        self._open(openings)
        self._advance()
        for k, move in enumerate(moves or []):
            if self._spiel.is_terminal():
                raise ValueError(f"moves[{k}]: the game is already over")
            if parse_move(self._spiel, self._spiel.current_player(), move) is None:
                raise ValueError(f"moves[{k}] = {move!r} is not a legal move there")
            self._play(move)
        return self._observe(mover=None)

    def step(
        self,
        action: GameAction,
        seed: int | None = None,
        seat: int | None = None,
        opponent: str = "random",
        moves: list[str] | None = None,
        openings: int = 0,
        **kwargs: Any,
    ) -> GameObservation:
        """One move for the seat to move. With ``moves`` (stateless HTTP), the game is first
        replayed from ``seed``, ``seat``, ``opponent``, ``openings`` and those moves."""
        if moves is not None:
            self.reset(seed=seed, seat=seat, opponent=opponent, moves=moves, openings=openings)
        if self._spiel is None:
            raise NoEpisodeError("no game in progress: call reset() before playing a move")
        if self._spiel.is_terminal():
            raise NoEpisodeError("the game is over: call reset() to play another")
        mover = self._spiel.current_player()
        self._play(action.move)
        return self._observe(mover=mover)

    @property
    def state(self) -> GameState:
        return self._state

    # ---- internals -------------------------------------------------------------------------

    def _play(self, move: str) -> None:
        spiel = self._spiel
        mover = spiel.current_player()
        action = parse_move(spiel, mover, move)
        self._my_moves.append(move)
        self._state.step_count += 1
        if action is None:
            self._invalid = True
        else:
            spiel.apply_action(action)
            self._state.history.append(action)
            self._advance()
        self._sync_state()

    def _chance(self) -> None:
        """Sample the chance nodes ahead from the episode's generator."""
        spiel = self._spiel
        while spiel.is_chance_node():
            actions, probs = zip(*spiel.chance_outcomes(), strict=True)
            spiel.apply_action(self._rng.choices(actions, weights=probs)[0])

    def _open(self, moves: int) -> None:
        """Play up to ``moves`` random moves into open positions (see the module docstring)."""
        spiel = self._spiel
        for _ in range(moves):
            self._chance()
            if spiel.is_terminal():
                return
            going_on = [a for a in spiel.legal_actions() if _open_position(spiel.child(a))]
            if not going_on:
                return
            action = self._rng.choice(going_on)
            spiel.apply_action(action)
            self._state.history.append(action)

    def _advance(self) -> None:
        """Sample chance nodes and play the opponent's seats until a held seat is to move."""
        spiel, held = self._spiel, self._state.held_seat
        while not spiel.is_terminal():
            if spiel.is_chance_node():
                self._chance()
            elif held is not None and spiel.current_player() != held:
                action = self._opponent(spiel)
                spiel.apply_action(action)
                self._state.history.append(action)
            else:
                break
        self._sync_state()

    def _over(self) -> bool:
        return self._invalid or self._spiel.is_terminal()

    def _sync_state(self) -> None:
        st = self._state
        st.done = self._over()
        st.current_player = None if st.done else self._spiel.current_player()
        st.returns = self._returns() if st.done else []

    def _returns(self) -> list[float]:
        n = self.game.num_players()
        if not self._invalid:
            return [float(r) for r in self._spiel.returns()]
        loser = self._spiel.current_player()
        return [float(self.game.min_utility()) if p == loser else 0.0 for p in range(n)]

    def _observe(self, mover: int | None) -> GameObservation:
        spiel, st, n = self._spiel, self._state, self.game.num_players()
        done = self._over()
        to_move = None if done else spiel.current_player()
        seat = st.held_seat if st.held_seat is not None else (to_move if not done else mover)
        seat = 0 if seat is None else seat
        rewards = self._returns() if done else [0.0] * n
        if mover is None and not done:
            rewards = []
        text, info = seat_text(self.game, spiel, seat)
        ids, names = ([], []) if done else move_names(spiel, to_move)
        reward_seat = st.held_seat if st.held_seat is not None else mover
        reward = rewards[reward_seat] if rewards and reward_seat is not None else 0.0
        return GameObservation(
            game=self.game_name,
            num_players=n,
            current_player=to_move,
            seat=seat,
            rewards=rewards,
            text=text,
            info_state=info,
            moves=names,
            legal_actions=ids,
            my_moves=list(self._my_moves),
            invalid_move=self._invalid,
            done=done,
            reward=reward,
        )


def _open_position(spiel: Any) -> bool:
    """Not over, and the player to move has no move that ends the game (at a chance node: not
    over)."""
    if spiel.is_terminal():
        return False
    if spiel.is_chance_node():
        return True
    return not any(spiel.child(a).is_terminal() for a in spiel.legal_actions())
