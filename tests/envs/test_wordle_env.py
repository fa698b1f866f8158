"""wordle_env: scoring rules, typed steps and MCP tools on a real server, OpenEnv 0.10's clients."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from wordle_env import WORDS, WordleAction, WordleEnv, WordleGame, score_guess

from openenv_train.runtime import LocalProcessProvider


@pytest.fixture(scope="module")
def wordle_url() -> Iterator[str]:
    with LocalProcessProvider("wordle_env.server.app:app", startup_timeout=120) as p:
        yield p.base_url


def test_scoring_handles_repeated_letters() -> None:
    assert score_guess("crane", "crane") == "GGGGG"
    assert score_guess("speed", "abide") == "BBYBY"  # one e in the answer: only one e marked
    assert score_guess("eerie", "sheep") == "YYBBB"
    assert score_guess("allow", "lolly") == "BYGYB"


def test_reward_solve_beats_partial_credit() -> None:
    game = WordleGame(answer="crane", max_turns=3, allow_any_word=True)
    assert game.guess("crate") == "GGGBG" and game.guess("zz") == "" and not game.done
    assert game.guess("trace") == "BGGYG" and game.done and not game.solved
    assert game.reward == pytest.approx(0.5 * 0.8)  # best guess: 4 greens of 5
    won = WordleGame(answer="crane", allow_any_word=True)
    won.guess("crate")
    won.guess("crane")
    assert won.solved and won.reward == pytest.approx(0.9)
    with pytest.raises(RuntimeError, match="reset"):
        won.guess("crane")


async def test_typed_episode_and_state(wordle_url: str) -> None:
    answer = WordleGame.new(seed=4).answer
    async with WordleEnv(base_url=wordle_url) as env:
        result = await env.reset(seed=4)
        assert (
            result.observation.turns_left == 6
            and "guess the 5 letter word" in result.observation.text
        )
        other = next(w for w in WORDS if w != answer)
        result = await env.step(WordleAction(guess=other))
        assert result.observation.patterns == [score_guess(other, answer)] and not result.done
        result = await env.step(WordleAction(guess="qqqqq"))  # not a word: a turn, and says why
        assert result.observation.error and "not in the word list" in result.observation.error
        result = await env.step(WordleAction(guess=answer.upper()))
        assert result.done and result.reward == pytest.approx(0.8)
        state = await env.state()
        assert state.solved and state.answer == answer and state.step_count == 3


async def test_mcp_tools_share_the_game(wordle_url: str) -> None:
    async with WordleEnv(base_url=wordle_url) as env:
        await env.reset(seed=9, max_turns=2)
        assert {t.name for t in await env.list_tools()} == {"guess", "board"}
        text = await env.call_tool("guess", word="about")
        assert text.startswith("about ") and "1 guesses left" in text
        assert (await env.call_tool("board"))["guesses"] == ["about"]
        final = await env.step(WordleAction(guess="zebra"))
        assert final.done


def test_openenv_clients_drive_it(wordle_url: str) -> None:
    openenv_core = pytest.importorskip("openenv.core")
    with openenv_core.GenericEnvClient(base_url=wordle_url).sync() as env:
        env.reset(seed=1)
        result = env.step({"guess": "crane"})
        assert len(result.observation["patterns"][0]) == 5
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step({"word": "crane"})
    # the HTTP /mcp JSON-RPC route (what OpenEnv's MCPToolClient uses in production mode)
    listed = httpx.post(
        wordle_url + "/mcp", json={"jsonrpc": "2.0", "method": "tools/list", "id": 1}
    ).json()
    assert {t["name"] for t in listed["result"]["tools"]} == {"guess", "board"}
