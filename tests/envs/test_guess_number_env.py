"""guess_number_env: the rules, a real server through our client, MCP tools and OpenEnv 0.10's client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from guess_number_env import (
    BASELINES,
    GuessAction,
    GuessGame,
    GuessNumberEnv,
    binary_search_budget,
    play,
    solve_reward,
)

from openenv_train.runtime import LocalProcessProvider


@pytest.fixture(scope="module")
def guess_url() -> Iterator[str]:
    with LocalProcessProvider("guess_number_env.server.app:app", startup_timeout=120) as p:
        yield p.base_url


def test_rules_feedback_and_reward() -> None:
    game = GuessGame(low=1, high=16, max_turns=5, target=11)
    assert [game.guess(8), game.guess(12), game.guess(99), game.guess(10)] == [
        "higher",
        "lower",
        "out_of_range",
        "higher",
    ]
    assert (game.lo, game.hi, game.done) == (11, 11, False)
    assert game.guess(11) == "correct" and game.done and game.reward == solve_reward(5) == 0.6
    with pytest.raises(RuntimeError, match="reset"):
        game.guess(1)
    lost = GuessGame(low=1, high=16, max_turns=1, target=3)
    lost.guess(4)
    assert lost.done and not lost.solved and lost.reward == 0.0


def test_seeded_games_repeat_and_settings_are_checked() -> None:
    assert GuessGame.new(1, 100, 7, seed=5).target == GuessGame.new(1, 100, 7, seed=5).target
    with pytest.raises(ValueError, match="low=5, high=5"):
        GuessGame.new(5, 5, 3)
    with pytest.raises(ValueError, match="max_turns"):
        GuessGame.new(1, 10, 0)


def test_baselines_binary_search_always_wins_random_does_not() -> None:
    kw = dict(games=400, seed=0, low=1, high=16, max_turns=5)
    assert binary_search_budget(1, 16) == 5
    best = play(BASELINES["binary search"], **kw)
    rand = play(BASELINES["random"], **kw)
    assert best["solve_rate"] == 1.0 and best["mean_guesses"] == pytest.approx(3.375, abs=0.2)
    assert 0.15 < rand["solve_rate"] < 0.45  # 1 - (15/16)^5 = 0.276
    assert best["mean_reward"] > play(BASELINES["random consistent"], **kw)["mean_reward"]


async def test_typed_episode_through_a_real_server(guess_url: str) -> None:
    async with GuessNumberEnv(base_url=guess_url) as env:
        result = await env.reset(seed=7, low=1, high=16, max_turns=5)
        obs = result.observation
        assert obs.feedback == "start" and obs.turns_left == 5 and not result.done
        assert obs.text == "guess a number from 1 to 16 , you have 5 guesses"
        target = GuessGame.new(1, 16, 5, seed=7).target
        while not result.done:  # binary search over the server's feedback
            result = await env.step(GuessAction(guess=(obs.lo + obs.hi) // 2))
            obs = result.observation
        assert obs.feedback == "correct" and obs.last_guess == target
        assert result.reward == solve_reward(5 - obs.turns_left)
        state = await env.state()
        assert state.solved and state.target == target and state.seed == 7


async def test_mcp_tool_on_the_same_session(guess_url: str) -> None:
    async with GuessNumberEnv(base_url=guess_url) as env:
        await env.reset(seed=3, low=1, high=8, max_turns=3, show_range=True)
        assert [t.name for t in await env.list_tools()] == ["guess"]
        target = GuessGame.new(1, 8, 3, seed=3).target
        first = target % 8 + 1  # any number but the target
        text = await env.call_tool("guess", number=first)
        word = "higher" if target > first else "lower"
        assert text.startswith(f"the number is {word} than {first} , 2 guesses left , it is from")
        typed = await env.step(GuessAction(guess=target))  # typed and tool steps share the game
        assert typed.done and typed.observation.feedback == "correct"


async def test_bad_input_is_a_clear_error_and_the_session_survives(guess_url: str) -> None:
    async with GuessNumberEnv(base_url=guess_url) as env:
        with pytest.raises(Exception, match="low=9, high=2"):
            await env.reset(low=9, high=2)
        await env.reset(seed=1, low=1, high=4, max_turns=2)
        out = await env.step(GuessAction(guess=50))
        assert out.observation.feedback == "out_of_range" and out.reward == 0.0


def test_openenv_generic_client_plays(guess_url: str) -> None:
    openenv_core = pytest.importorskip("openenv.core")
    with openenv_core.GenericEnvClient(base_url=guess_url).sync() as env:
        result = env.reset(seed=11, low=1, high=100, max_turns=7)
        lo, hi = 1, 100
        while not result.done:
            result = env.step({"guess": (lo + hi) // 2})
            lo, hi = result.observation["lo"], result.observation["hi"]
        assert result.observation["feedback"] == "correct" and result.reward > 0
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step({"number": 3})


def test_action_model_takes_typed_and_mcp_actions() -> None:
    from pydantic import ValidationError

    from openenv_train.core.mcp_types import CallToolAction, ListToolsAction

    assert GuessAction.model_validate({"guess": 4}).guess == 4
    call = GuessAction.model_validate(
        {"type": "call_tool", "tool_name": "guess", "arguments": {"number": 4}}
    )
    assert isinstance(call, CallToolAction) and call.arguments == {"number": 4}
    assert isinstance(GuessAction.model_validate({"type": "list_tools"}), ListToolsAction)
    with pytest.raises(ValidationError, match="gues"):
        GuessAction.model_validate({"gues": 4})
