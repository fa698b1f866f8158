"""textarena's single-player games as multi-turn envs: OpenEnv 0.10's GenericEnvClient and our
rollout engine play them on loopback; a seed replays the same game, even with sessions
interleaved in one server."""

from __future__ import annotations

import re

import pytest
from ecosystem_helpers import play, serve
from openenv.core import GenericEnvClient
from textarena_env.games import SINGLE_PLAYER_GAMES, game_ids, live_game_ids
from textarena_env.text_spec import TextArenaSpec

from openenv_train.catalog import describe, env_names

SAMPLE = ("TowerOfHanoi-v0", "Mastermind-v0", "2048-v0-3x3", "Minesweeper-v0-small")


def test_every_single_player_game_is_in_the_catalog() -> None:
    ids = game_ids()
    assert ids == live_game_ids()  # the written-out list is true
    assert {i.split("-v", 1)[0] for i in ids} == set(SINGLE_PLAYER_GAMES)
    assert {f"textarena/{i}" for i in ids} <= set(env_names())
    schema = describe("textarena/GuessTheNumber-v0")["action"]
    assert schema["required"] == ["message"]


@pytest.mark.parametrize("game", SAMPLE)
def test_openenv_generic_client_starts_and_moves_in_a_sample(game: str) -> None:
    with serve(f"textarena/{game}") as url, GenericEnvClient(base_url=url).sync() as env:
        first = env.reset(seed=3)
        assert first.done is False and first.observation["text"]
        assert env.reset(seed=3).observation["text"] == first.observation["text"]
        after = env.step({"message": "[0]"})
        assert after.observation["turn"] == 1 and after.observation["text"]


def binary_search(text: str) -> str:
    """GuessTheNumber (1..20): halve the range the game's higher/lower answers leave."""
    lo, hi = 1, 20
    guesses = [int(g) for g in re.findall(r"assistant\n\[(\d+)\]", text)]
    feedback = re.findall(r"target number is (higher|lower)", text)
    for guess, said in zip(guesses, feedback, strict=False):
        lo, hi = (guess + 1, hi) if said == "higher" else (lo, guess - 1)
    return f"[{(lo + hi) // 2}]"


def test_a_seed_replays_the_game_with_sessions_interleaved() -> None:
    with serve("textarena/GuessTheNumber-v0") as url:
        with (
            GenericEnvClient(base_url=url).sync() as a,
            GenericEnvClient(base_url=url).sync() as b,
        ):
            a.reset(seed=7)
            b.reset(seed=7)
            for guess in (10, 5, 15, 3):  # both play the same moves, one after the other
                ra, rb = a.step({"message": f"[{guess}]"}), b.step({"message": f"[{guess}]"})
                assert ra.observation["text"] == rb.observation["text"] and ra.done == rb.done
            # a third session, reset with another seed in between, does not disturb either
            b.reset(seed=8)
            b.step({"message": "[10]"})
            a.reset(seed=7)
            assert a.step({"message": "[10]"}).observation["text"] == first_reply_to_seed_7(url)


def first_reply_to_seed_7(url: str) -> str:
    with GenericEnvClient(base_url=url).sync() as env:
        env.reset(seed=7)
        return env.step({"message": "[10]"}).observation["text"]


def test_random_draws_during_play_stay_per_session() -> None:
    """2048 places each new tile with Python's global random: three interleaved sessions, two
    on the same seed, still see the same boards."""
    moves = ["[Up]", "[Left]", "[Down]", "[Right]"] * 3
    with serve("textarena/2048-v0-3x3") as url:
        with (
            GenericEnvClient(base_url=url).sync() as a,
            GenericEnvClient(base_url=url).sync() as b,
            GenericEnvClient(base_url=url).sync() as c,
        ):
            a.reset(seed=4), c.reset(seed=5), b.reset(seed=4)
            for move in moves:
                ra = a.step({"message": move})
                c.step({"message": move})
                rb = b.step({"message": move})
                assert ra.observation["text"] == rb.observation["text"]


def test_bad_input_gets_a_clear_error_and_the_session_survives() -> None:
    with serve("textarena/GuessTheNumber-v0") as url, GenericEnvClient(base_url=url).sync() as env:
        env.reset(seed=1)
        with pytest.raises(RuntimeError, match=r"'message': Field required.*VALIDATION_ERROR"):
            env.step({"answer": "[4]"})  # the field is `message`
        result = env.step({"message": "no brackets"})  # the game's own invalid move
        assert result.observation["invalid_move"] is True and result.done is False
        assert env.step({"message": "[10]"}).observation["turn"] == 2  # the session goes on


async def test_rollout_engine_plays_guess_the_number_to_the_end() -> None:
    with serve("textarena/GuessTheNumber-v0") as url:
        batch = await play(TextArenaSpec(seed=0), url, binary_search, episodes=8)
    assert batch.complete and len(batch.records) == 8
    assert [r.reward for r in batch.records] == [1.0] * 8
    assert all(2 <= r.num_turns <= 5 for r in batch.records)
