"""BlackJack env in process: models, validation, seeding, and the end-of-game contract."""

from __future__ import annotations

import pytest
from blackjack_env.game import HIT, STAND, BlackjackGame, basic_strategy, hand_total
from blackjack_env.models import BlackjackAction, BlackjackObservation, BlackjackState
from blackjack_env.server.environment import BlackjackEnvironment
from pydantic import ValidationError


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (0, HIT),
        (1, STAND),
        ("hit", HIT),
        ("stand", STAND),
        (" Stand ", STAND),
        ("HIT", HIT),
        ("1", 1),
    ],
)
def test_action_accepts_ints_and_names(raw, expected):
    action = BlackjackAction(action=raw)
    assert action.action == expected and type(action.action) is int


@pytest.mark.parametrize("raw", [2, -1, True, "double", 0.5, None, [0]])
def test_action_rejects_everything_else_naming_the_field(raw):
    with pytest.raises(ValidationError) as info:
        BlackjackAction(action=raw)
    err = info.value.errors()[0]
    assert err["loc"] == ("action",)
    assert "0 (hit) or 1 (stand)" in str(info.value)


def test_action_rejects_unknown_fields():
    with pytest.raises(ValidationError, match="move"):
        BlackjackAction.model_validate({"action": 0, "move": "hit"})


def test_action_schema_lists_the_two_actions():
    schema = BlackjackAction.model_json_schema()
    assert schema["properties"]["action"]["enum"] == [0, 1]
    assert schema["required"] == ["action"]


def test_hand_totals():
    assert hand_total(["AH", "6C"]) == (17, True)
    assert hand_total(["AH", "6C", "9D"]) == (16, False)
    assert hand_total(["AH", "AC", "9D"]) == (21, True)
    assert hand_total(["KH", "QC"]) == (20, False)
    assert hand_total(["KH", "QC", "2S"]) == (22, False)


def test_from_cards_rejects_bad_decks():
    with pytest.raises(ValueError, match="distinct cards"):
        BlackjackGame.from_cards(["AH", "AH", "2C", "3C"])
    with pytest.raises(ValueError, match="distinct cards"):
        BlackjackGame.from_cards(["1X", "2C", "3C", "4C"])
    with pytest.raises(ValueError, match="distinct cards"):
        BlackjackGame.from_cards(["2C", "3C", "4C"])


def test_dealer_stands_on_soft_17_and_player_bust_ends_at_once():
    # draw order: player, player, dealer hole, dealer up, then the rest
    stand_soft17 = BlackjackGame.from_cards(["TH", "8C", "6D", "AS", "KD"])
    stand_soft17.apply(STAND)
    assert stand_soft17.dealer == ["AS", "6D"] and stand_soft17.reward == 1.0
    bust = BlackjackGame.from_cards(["TH", "6C", "5D", "9S", "KD", "2C"])
    bust.apply(HIT)
    assert bust.done and bust.reward == -1.0 and bust.dealer == ["9S", "5D"]  # dealer never drew
    with pytest.raises(ValueError, match="reset"):
        bust.apply(STAND)


async def test_seed_reproduces_the_deal_and_the_whole_game():
    a, b = BlackjackEnvironment(), BlackjackEnvironment()
    for seed in range(50):
        oa, ob = await a.reset(seed=seed), await b.reset(seed=seed)
        assert oa.model_dump() == ob.model_dump()
        while not oa.done:
            act = BlackjackAction(action=HIT if oa.player_total < 17 else STAND)
            oa, ob = await a.step(act), await b.step(act)
            assert oa.model_dump() == ob.model_dump()
    deals = set()
    for seed in range(50):
        obs = await a.reset(seed=seed)
        deals.add(tuple(obs.player_cards) + (obs.dealer_upcard,))
    assert len(deals) > 40  # different seeds give different deals


async def test_unseeded_resets_differ():
    env = BlackjackEnvironment()
    deals = {tuple((await env.reset()).player_cards) for _ in range(30)}
    assert len(deals) > 20


async def test_observation_contract_and_step_after_done():
    env = BlackjackEnvironment()
    obs = await env.reset(seed=3, episode_id="ep-1")
    BlackjackObservation.model_validate(obs.model_dump())  # a valid model, not just constructed
    assert obs.done is False and obs.reward == 0.0 and obs.legal_actions == [HIT, STAND]
    assert len(obs.player_cards) == 2 and obs.dealer_cards == []
    total, soft = hand_total(obs.player_cards)
    assert (obs.player_total, obs.soft) == (total, soft)
    assert obs.text == f"player {total} {'soft' if soft else 'hard'} dealer {obs.dealer_upcard}"
    st = await env.state()
    assert isinstance(st, BlackjackState) and st.episode_id == "ep-1" and st.seed == 3
    assert len(st.dealer_cards) == 1  # the hole card stays hidden while the game runs
    obs = await env.step(BlackjackAction(action=STAND))
    assert obs.done and obs.reward in (-1.0, 0.0, 1.0) and obs.legal_actions == []
    assert len(obs.dealer_cards) >= 2 and obs.dealer_cards[0] != ""
    st = await env.state()
    assert st.done and st.step_count == 1 and st.reward == obs.reward and len(st.dealer_cards) >= 2
    with pytest.raises(RuntimeError, match="call reset"):
        await env.step(BlackjackAction(action=HIT))
    again = await env.reset(seed=3)
    assert again.done is False  # the session is usable after the error


async def test_step_before_reset_and_bad_seed():
    env = BlackjackEnvironment()
    with pytest.raises(RuntimeError, match="reset"):
        await env.step(BlackjackAction(action=HIT))
    for bad in (-1, "7", 1.5, True):
        with pytest.raises(ValueError, match="seed must be an integer >= 0"):
            await env.reset(seed=bad)


async def test_basic_strategy_wins_about_43_percent_in_process():
    env = BlackjackEnvironment()
    wins = 0
    n = 20_000
    for seed in range(n):
        obs = await env.reset(seed=seed)
        while not obs.done:
            act = basic_strategy(obs.player_total, obs.soft, obs.dealer_upcard)
            obs = await env.step(BlackjackAction(action=act))
        wins += obs.reward > 0
    assert 0.41 < wins / n < 0.45
