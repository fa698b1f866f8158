"""Same-state deals: the seed -> first-state map matches the server's deal, and the sampling
weights follow ``frequency ** power``."""

from __future__ import annotations

import pytest
from blackjack_env.deals import StateDeals, first_state
from blackjack_env.server.environment import BlackjackEnvironment
from blackjack_env.text_spec import dealer_label


async def test_first_state_is_what_reset_deals():
    env = BlackjackEnvironment()
    for seed in (0, 7, 1_000_000_123):
        obs = await env.reset(seed=seed)
        assert first_state(seed) == (obs.player_total, obs.soft, dealer_label(obs.dealer_upcard))


def test_groups_share_a_state_with_distinct_decks_and_repeat():
    deals = StateDeals(seed=1, size=5000, power=0.5)
    for group in range(6):
        seeds = [deals.seed_for(0, group, row) for row in range(group * 16, group * 16 + 16)]
        assert len({first_state(s) for s in seeds}) == 1
        if len(deals._buckets[deals._states.index(first_state(seeds[0]))]) >= 16:
            assert len(set(seeds)) == 16
    again = StateDeals(seed=1, size=5000, power=0.5)
    assert [again.seed_for(0, 2, r) for r in range(32, 48)] == [
        deals.seed_for(0, 2, r) for r in range(32, 48)
    ]
    deals.next_call()
    assert [deals.seed_for(1, 2, r) for r in range(32, 48)] != [
        again.seed_for(0, 2, r) for r in range(32, 48)
    ]


def test_power_flattens_the_state_mix():
    natural = StateDeals(seed=0, size=5000, power=1.0).frequencies()
    sqrt = StateDeals(seed=0, size=5000, power=0.5).frequencies()
    flat = StateDeals(seed=0, size=5000, power=0.0).frequencies()
    common, rare = (20, False, "10"), (18, True, "A")
    assert natural[common] > sqrt[common] > flat[common]
    assert natural[rare] < sqrt[rare] < flat[rare]
    assert flat[common] == pytest.approx(flat[rare])


def test_bad_settings_name_the_setting():
    with pytest.raises(ValueError, match="power"):
        StateDeals(seed=0, power=2.0)
    with pytest.raises(ValueError, match="size"):
        StateDeals(seed=0, size=0)
