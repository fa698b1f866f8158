"""BlackJack through a real server: same seeds give the same games as in process; errors are clean."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from blackjack_env import BlackjackAction, BlackjackEnv, BlackjackObservation, BlackjackState
from blackjack_env.game import HIT, STAND, BlackjackGame, basic_strategy, rank_label

from openenv_train.client import GenericEnvClient
from openenv_train.core.errors import ActionValidationError, EnvExecutionError

HANDS, CLIENTS = 3000, 12


def _policy(seed: int, total: int, soft: bool, up: str) -> int:
    # vary the policy by seed so hits, busts and dealer play all get exercised
    return basic_strategy(total, soft, up) if seed % 2 else (HIT if total < 17 else STAND)


async def test_thousands_of_hands_match_the_in_process_game(blackjack_url):
    async def play(seeds: range) -> int:
        played = 0
        async with BlackjackEnv(base_url=blackjack_url) as env:
            for seed in seeds:
                local = BlackjackGame.deal(seed=seed)
                result = await env.reset(seed=seed)
                while True:
                    obs = result.observation
                    assert isinstance(obs, BlackjackObservation)
                    assert obs.player_cards == local.player, seed
                    assert obs.dealer_upcard == rank_label(local.dealer_upcard), seed
                    assert (obs.player_total, obs.soft) == (local.player_total, local.player_soft)
                    assert obs.text == local.prompt_text()
                    assert result.done == local.done and obs.legal_actions == local.legal_actions()
                    if local.done:
                        assert result.reward == local.reward and obs.dealer_cards == local.dealer
                        break
                    assert result.reward == 0.0
                    action = _policy(seed, obs.player_total, obs.soft, obs.dealer_upcard)
                    local.apply(action)
                    result = await env.step(BlackjackAction(action=action))
                played += 1
        return played

    chunks = [range(i, HANDS, CLIENTS) for i in range(CLIENTS)]
    assert sum(await asyncio.gather(*(play(c) for c in chunks))) == HANDS


async def test_step_after_done_is_an_execution_error_and_the_session_survives(blackjack_url):
    async with BlackjackEnv(base_url=blackjack_url) as env:
        result = await env.reset(seed=11)
        while not result.done:
            result = await env.step(BlackjackAction(action=STAND))
        with pytest.raises(EnvExecutionError, match="call reset"):
            await env.step(BlackjackAction(action=HIT))
        again = await env.reset(seed=11)
        assert again.done is False and again.observation.legal_actions == [HIT, STAND]
        state = await env.state()
        assert isinstance(state, BlackjackState) and state.seed == 11 and state.step_count == 0


async def test_bad_actions_get_validation_errors_naming_the_field(blackjack_url):
    async with GenericEnvClient(base_url=blackjack_url) as env:
        await env.reset(seed=5)
        for bad in ({"action": 2}, {"action": "double"}, {"move": 0}, {"action": True}):
            with pytest.raises(ActionValidationError) as info:
                await env.step(bad)
            assert any(e["loc"][-1] in ("action", "move") for e in info.value.errors), (
                info.value.errors
            )
        first = await env.reset(seed=5)
        result = await env.step({"action": "stand"})  # names are accepted and normalised
        assert result.done and result.reward in (-1.0, 0.0, 1.0)
        assert first.observation["player_cards"] == result.observation["player_cards"]


def test_sync_client_and_http_routes(blackjack_url):
    with BlackjackEnv(base_url=blackjack_url).sync() as env:
        a = env.reset(seed=42)
        b = env.reset(seed=42)
        assert a.observation == b.observation
        assert env.state().seed == 42
    with httpx.Client(base_url=blackjack_url, timeout=10) as http:
        schema = http.get("/schema").json()
        assert schema["action"]["properties"]["action"]["enum"] == [0, 1]
        assert {"player_total", "soft", "dealer_upcard", "text"} <= set(
            schema["observation"]["properties"]
        )
        assert http.get("/metadata").json()["name"] == "blackjack_env"
        bad = http.post("/step", json={"action": {"action": 7}})
        assert bad.status_code == 422 and "action" in str(bad.json()["detail"])
