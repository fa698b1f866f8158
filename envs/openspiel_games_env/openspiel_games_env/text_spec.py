"""``SeatTextSpec``: an OpenSpiel game as words for a token-level policy, seat by seat.

Kuhn poker and tic-tac-toe have compact word renderings with a closed vocabulary (so the tiny
word-level model of ``openenv_train.policy.tiny`` can play them):

- Kuhn: ``kuhn seat 1 card K history pass bet action:`` -> ``pass`` or ``bet``;
- tic-tac-toe: ``ttt seat 0 board .0 x1 .2 .3 o4 .5 .6 .7 .8 action:`` -> a cell ``0``..``8``.

Each tic-tac-toe cell is one word holding its mark and its number: the tiny model has no absolute
positions (rotary embeddings only), and with bare marks (``. x . . o ...``) it could not even be
taught by supervision to block an open line (about 45% right after 1,200 steps, against 93%
with numbered cells).

Any other game is shown as OpenSpiel's own text and its move names (a real tokenizer needed).
With ``seat`` set the spec holds that seat against the server's built-in ``opponent``: the
single-agent rollout engine plays it as is; with ``seat=None`` it serves self-play
(``openenv_train.rollout.selfplay``), where one policy answers for every seat.
"""

from __future__ import annotations

import random
from typing import Any

from openenv_train.rollout import SeededTextSpec

from .models import GameAction

KUHN_CARDS = "JQK"
KUHN_MOVES = {"p": "pass", "b": "bet"}
KUHN_VOCAB = ("kuhn", "seat", "0", "1", "card", *KUHN_CARDS, "history", "pass", "bet", "action:")
TTT_CELLS = tuple(f"{mark}{i}" for mark in ".xo" for i in range(9))
TTT_VOCAB = ("ttt", "seat", "board", "action:", *(str(i) for i in range(9)), *TTT_CELLS)
VOCABULARIES = {"kuhn_poker": KUHN_VOCAB, "tic_tac_toe": TTT_VOCAB}


def kuhn_text(seat: int, info_state: str) -> str:
    """``kuhn seat 0 card J history pass bet action:`` from OpenSpiel's info state (``0pb``)."""
    card, history = info_state[0], info_state[1:]
    words = ["kuhn", "seat", str(seat), "card", KUHN_CARDS[int(card)], "history"]
    words += [KUHN_MOVES[c] for c in history]
    return " ".join([*words, "action:"])


def ttt_text(seat: int, board: str) -> str:
    """``ttt seat 0 board .0 x1 .2 ... action:`` from OpenSpiel's board (``...\\n.x.\\n...``)."""
    cells = [f"{c}{i}" for i, c in enumerate(c for c in board if c in ".xo")]
    return " ".join(["ttt", "seat", str(seat), "board", *cells, "action:"])


def seat_view(game: str, seat: int, text: str, info_state: str, moves: list[str]) -> str:
    """The words a seat is shown in ``game``."""
    if game == "kuhn_poker":
        return kuhn_text(seat, info_state)
    if game == "tic_tac_toe":
        return ttt_text(seat, text)
    return f"{game} seat {seat}\n{text}\nmoves: {', '.join(moves)}\naction:"


class SeatTextSpec(SeededTextSpec):
    """Text glue for ``openspiel/<game>``: one move per answer, for the seat to move."""

    invalid_action_reward = -2.0
    truncation_reward = 0.0

    def __init__(
        self,
        game: str = "kuhn_poker",
        seed: int | None = None,
        same_task_per_group: bool = True,
        seat: int | None = None,
        opponent: str = "random",
        mask_illegal: bool = False,
    ) -> None:
        super().__init__(seed=seed, same_task_per_group=same_task_per_group)
        self.game = game
        self.seat = seat
        self.opponent = opponent
        #: self-play generation limited to the legal moves' words (``legal_answers``)
        self.mask_illegal = mask_illegal
        self.vocabulary = VOCABULARIES.get(game, ())
        #: seats the policy holds per game: both in self-play (no ``seat``), else one
        self.selfplay_seats = 2 if seat is None else 1

    def holding_seat(self, seat: int, opponent: str = "random") -> SeatTextSpec:
        """This spec holding ``seat`` against the server's built-in ``opponent`` (a single-agent
        env: how a self-play env is evaluated seat by seat)."""
        return SeatTextSpec(
            self.game, self.seed, self.same_task_per_group, seat, opponent, self.mask_illegal
        )

    def random_episode(self, rng: random.Random) -> list[tuple[str, str]]:
        """One game of random moves as chat turns of one seat (the format warm-up's data)."""
        from .games import load

        return random_turns(load(self.game), self.game, rng)

    @property
    def client_cls(self) -> Any:  # type: ignore[override]
        from .client import OpenSpielEnv

        return OpenSpielEnv

    def reset_kwargs(self, prompt: Any, group: int, row: int) -> dict[str, Any]:
        kw = super().reset_kwargs(prompt, group, row)
        if self.seat is not None:
            kw.update(seat=self.seat, opponent=self.opponent)
        return kw

    def view(self, obs: Any) -> str:
        return seat_view(self.game, int(obs.seat or 0), obs.text, obs.info_state, obs.moves)

    def initial_prompt(self, result: Any, prompt: Any) -> str:
        return self.view(result.observation)

    def render(self, result: Any) -> str:
        return self.view(result.observation)

    def parse_action(self, text: str) -> GameAction | None:
        words = text.replace("<eos>", " ").split()
        if len(words) != 1:
            return None
        return GameAction(move=words[0])

    def legal_action(self, text: str, observation: Any) -> GameAction | None:
        """The answer's move when it is legal for the seat to move (by name, any case, or id)."""
        action = self.parse_action(text)
        if action is None:
            return None
        move = action.move.lower()
        names = [m.lower() for m in observation.moves]
        ids = [str(a) for a in observation.legal_actions]
        return action if move in names or move in ids else None

    def legal_answers(self, observation: Any) -> list[str] | None:
        """The words of the legal moves when ``mask_illegal`` (self-play masks generation to
        them), else None."""
        if not self.mask_illegal:
            return None
        moves = list(observation.moves)
        ids = [int(a) for a in observation.legal_actions]
        return [answer_word(self.game, m, a) for m, a in zip(moves, ids, strict=True)]

    def fallback_action(self, observation: Any, rng: random.Random) -> GameAction:
        """A random legal move, played in place of an illegal answer (the mover is still
        scored ``invalid_action_reward``) so the other seats play on."""
        return GameAction(move=str(rng.choice(observation.legal_actions)))


def random_turns(game: Any, name: str, rng: random.Random) -> list[tuple[str, str]]:
    """One self-play game with uniformly random moves, as seat 0's or seat 1's chat turns (the
    seat drawn at random): the data of the format warm-up. It teaches the answer's form, not a
    policy."""
    from .games import move_names, seat_text

    seat = rng.randrange(2)
    state = game.new_initial_state()
    turns: list[tuple[str, str]] = []
    while not state.is_terminal():
        if state.is_chance_node():
            actions, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(rng.choices(actions, weights=probs)[0])
            continue
        player = state.current_player()
        ids, names = move_names(state, player)
        k = rng.randrange(len(ids))
        if player == seat:
            text, info = seat_text(game, state, seat)
            turns.append(("user", seat_view(name, seat, text, info, names)))
            turns.append(("assistant", answer_word(name, names[k], ids[k])))
        state.apply_action(ids[k])
    return turns or random_turns(game, name, rng)


def answer_word(game: str, name: str, action: int) -> str:
    """The word a model answers for a move (Kuhn: ``pass``/``bet``; tic-tac-toe: the cell)."""
    if game == "kuhn_poker":
        return name.lower()
    if game == "tic_tac_toe":
        return str(action)
    return name
