"""The BlackJack env server side: one OpenSpiel-rules game per session.

The methods are ``async`` on purpose: a step is microseconds of pure CPU, so the server runs it
on its event loop with no thread hop (the trainer pushes ~1,000+ episodes/s through these servers).
"""

from __future__ import annotations

import random
import uuid

from openenv_train import Environment, EnvironmentMetadata, NoEpisodeError

from ..game import HIT, STAND, BlackjackGame, hand_total, rank_label, render_state
from ..models import BlackjackAction, BlackjackObservation, BlackjackState


class BlackjackEnvironment(Environment[BlackjackAction, BlackjackObservation, BlackjackState]):
    """OpenSpiel blackjack: hit (0) or stand (1) against a dealer who stands on all 17s."""

    metadata = EnvironmentMetadata(
        name="blackjack_env",
        description="BlackJack with OpenSpiel's rules; the observation shows the player's total, "
        "softness and the dealer's up card. Reward +1/0/-1 at the end.",
        version="0.1.0",
    )

    def __init__(self) -> None:
        self._rng = random.Random()  # seeded from OS entropy; reset(seed=...) overrides per deal
        self._game: BlackjackGame | None = None
        self._seed: int | None = None
        self._episode_id: str | None = None
        self._steps = 0

    async def reset(
        self, seed: int | None = None, episode_id: str | None = None
    ) -> BlackjackObservation:
        # No **kwargs: the server drops reset options we do not name (as OpenEnv does), so a
        # trainer that forwards dataset columns as reset kwargs still works.
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(
                f"seed must be an integer >= 0 (or omitted for a random deal), got {seed!r}"
            )
        self._game = (
            BlackjackGame.deal(seed=seed) if seed is not None else BlackjackGame.deal(rng=self._rng)
        )
        self._seed = seed
        self._episode_id = episode_id or uuid.uuid4().hex
        self._steps = 0
        return self._observe(self._game)

    async def step(self, action: BlackjackAction) -> BlackjackObservation:
        game = self._game
        if game is None:
            raise NoEpisodeError("no game in progress: call reset() before step()")
        if game.done:
            raise NoEpisodeError(
                "the game is over (done=True): call reset() to deal a new hand before stepping again"
            )
        game.apply(action.action)
        self._steps += 1
        return self._observe(game)

    async def state(self) -> BlackjackState:
        game = self._game
        return BlackjackState(
            episode_id=self._episode_id,
            step_count=self._steps,
            seed=self._seed,
            player_cards=list(game.player) if game else [],
            dealer_cards=(list(game.dealer) if game.done else [game.dealer[0]]) if game else [],
            done=bool(game and game.done),
            reward=game.reward if game and game.done else None,
        )

    async def close(self) -> None:
        self._game = None

    @staticmethod
    def _observe(game: BlackjackGame) -> BlackjackObservation:
        # A hot path (one per reset/step): totals computed once, the text built from them.
        total, soft = hand_total(game.player)
        up = rank_label(game.dealer[0])
        done = game.done
        return BlackjackObservation(
            player_cards=list(game.player),
            player_total=total,
            soft=soft,
            dealer_upcard=up,
            legal_actions=[] if done else [HIT, STAND],
            text=render_state(total, soft, up),
            dealer_cards=list(game.dealer) if done else [],
            done=done,
            reward=game.reward if done else 0.0,
        )
