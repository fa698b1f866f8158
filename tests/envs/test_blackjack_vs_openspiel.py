"""Our blackjack rules against PyPI ``open_spiel`` (the reference OpenEnv's BlackJack example uses).

Two proofs: (1) replaying the very same card order through both games gives the same cards,
totals, legal actions and returns, hand by hand; (2) >= 100k independently sampled hands per
fixed policy give win/push/loss rates that agree within 4 standard errors, and basic strategy
lands on the published ~43.2% win rate.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest
from blackjack_env.game import (
    FULL_DECK,
    HIT,
    STAND,
    BlackjackGame,
    basic_strategy,
    hand_total,
    rank_label,
)

pyspiel = pytest.importorskip("pyspiel")

Policy = Callable[[int, bool, str], int]  # (player total, soft, dealer up label) -> action

POLICIES: dict[str, Policy] = {
    "always_stand": lambda total, soft, up: STAND,
    "hit_below_17": lambda total, soft, up: HIT if total < 17 else STAND,
    "basic_strategy": basic_strategy,
}
HANDS = 100_000


@pytest.fixture(scope="module")
def game():
    return pyspiel.load_game("blackjack")


def _spiel_view(state) -> tuple[int, bool, str]:
    cards = [FULL_DECK[i] for i in state.cards(0)]
    total, soft = hand_total(cards)
    assert total == state.get_best_player_total(0)
    return total, soft, rank_label(FULL_DECK[state.dealers_visible_card()])


def _play_spiel(game, policy: Policy, rng: random.Random) -> float:
    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            state.apply_action(outcomes[rng.randrange(len(outcomes))][0])
        else:
            state.apply_action(policy(*_spiel_view(state)))
    return state.returns()[0]


def _play_ours(policy: Policy, rng: random.Random) -> float:
    g = BlackjackGame.deal(rng=rng)
    while not g.done:
        g.apply(policy(g.player_total, g.player_soft, rank_label(g.dealer_upcard)))
    return g.reward


def _rates(returns: list[float]) -> dict[str, float]:
    n = len(returns)
    return {
        "win": sum(r > 0 for r in returns) / n,
        "push": sum(r == 0 for r in returns) / n,
        "loss": sum(r < 0 for r in returns) / n,
    }


def test_same_cards_same_game(game):
    """Hand by hand: a shared shuffled deck gives identical play in both implementations."""
    rng = random.Random(7)
    for hand in range(3000):
        order = list(range(52))
        rng.shuffle(order)
        policy = list(POLICIES.values())[hand % 3]
        ours = BlackjackGame.from_cards([FULL_DECK[i] for i in order])
        state = game.new_initial_state()
        cursor = 0
        while not state.is_terminal():
            if state.is_chance_node():
                state.apply_action(order[cursor])
                cursor += 1
                continue
            assert ours.player == [FULL_DECK[i] for i in state.cards(0)], hand
            assert ours.dealer_upcard == FULL_DECK[state.dealers_visible_card()], hand
            assert ours.legal_actions() == state.legal_actions(), hand
            action = policy(*_spiel_view(state))
            assert action == policy(
                ours.player_total, ours.player_soft, rank_label(ours.dealer_upcard)
            )
            state.apply_action(action)
            ours.apply(action)
        assert ours.done, hand
        assert ours.reward == state.returns()[0], (hand, ours.player, ours.dealer)
        assert ours.legal_actions() == []


@pytest.mark.parametrize("name", list(POLICIES))
def test_rates_agree_with_openspiel(game, name):
    policy = POLICIES[name]
    spiel_rng, our_rng = random.Random(1), random.Random(2)
    spiel = _rates([_play_spiel(game, policy, spiel_rng) for _ in range(HANDS)])
    ours = _rates([_play_ours(policy, our_rng) for _ in range(HANDS)])
    for outcome in ("win", "push", "loss"):
        p = (spiel[outcome] + ours[outcome]) / 2
        se = math.sqrt(2 * p * (1 - p) / HANDS)  # std error of the difference of two rates
        assert abs(spiel[outcome] - ours[outcome]) < 4 * se, (name, outcome, spiel, ours)
    if name == "basic_strategy":
        # basic strategy over 10^6 OpenSpiel hands: 43.2% win, 9.2% push (se ~0.05 points)
        se = math.sqrt(0.432 * 0.568 / HANDS)
        assert abs(ours["win"] - 0.432) < 4 * se + 0.0015, ours
        assert abs(ours["push"] - 0.092) < 4 * math.sqrt(0.092 * 0.908 / HANDS) + 0.0015, ours
