"""textarena's two-player games as seated envs (docs/reference/seats.md): self-play over the
WebSocket and stateless HTTP, one seat against the built-in random opponent, rewards per seat,
seeded replay, the seats rule for invalid moves, and an OpenEnv 0.10 client holding one seat.
Real servers on loopback."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import httpx
import pytest
from ecosystem_helpers import serve
from textarena_env import MoveAction, TextArenaSeatsEnv
from textarena_env.games import (
    OPPONENT_GAMES,
    TWO_PLAYER_GAMES,
    base_game,
    live_two_player_game_ids,
    two_player_game_ids,
)

from openenv_train.catalog import describe, env_names, get_entry

# seat 0 takes the top row while seat 1 plays 3 and 4: seat 0 wins on its third move
TTT_WIN = ["[0]", "[3]", "[1]", "[4]", "[2]"]


@pytest.fixture(scope="module")
def ttt() -> Iterator[str]:
    with serve("textarena/TicTacToe-v0") as url:
        yield url


@pytest.fixture(scope="module")
def kuhn() -> Iterator[str]:
    with serve("textarena/KuhnPoker-v0-short") as url:
        yield url


def test_every_two_player_game_is_in_the_catalog_with_seats() -> None:
    ids = two_player_game_ids()
    assert ids == live_two_player_game_ids()  # the written-out list is true
    assert {base_game(i) for i in ids} == set(TWO_PLAYER_GAMES)
    assert OPPONENT_GAMES <= set(TWO_PLAYER_GAMES)
    assert {f"textarena/{i}" for i in ids} <= set(env_names("textarena"))
    e = get_entry("textarena/KuhnPoker-v0")
    assert e.client().__name__ == "TextArenaSeatsEnv" and e.app.endswith(":KuhnPoker-v0")
    schema = describe("textarena/TicTacToe-v0")
    assert schema["action"]["required"] == ["message"]
    assert {"num_players", "current_player", "seat", "rewards"} <= set(
        schema["observation"]["properties"]
    )


async def play_both_seats(env: TextArenaSeatsEnv, seed: int, script: list[str]) -> tuple:
    """Hold both seats: play ``script`` for whichever seat is to move; return the seats that
    moved, the last result and the state."""
    r = await env.reset(seed=seed)
    assert r.observation.rewards == [] and r.observation.num_players == 2
    movers = []
    for move in script:
        obs = r.observation
        assert not r.done and obs.seat == obs.current_player
        movers.append(obs.current_player)
        r = await env.step(MoveAction(message=move))
    return movers, r, await env.state()


async def test_two_seat_tic_tac_toe_to_the_end_over_the_websocket(ttt: str) -> None:
    async with TextArenaSeatsEnv(ttt) as env:
        movers, r, state = await play_both_seats(env, 3, TTT_WIN)
    assert movers == [0, 1, 0, 1, 0]
    assert r.done and r.observation.current_player is None and not r.observation.invalid_move
    assert r.observation.rewards == [1.0, -1.0] and r.reward == 1.0  # the mover's reward
    assert state.returns == [1.0, -1.0] and state.held_seat is None and state.done
    assert [seat for seat, _ in state.history] == movers


async def test_each_seat_sees_only_its_own_card(kuhn: str) -> None:
    async with TextArenaSeatsEnv(kuhn) as env:
        r = await env.reset(seed=11)
        seen: dict[int, str] = {}
        while not r.done:
            obs = r.observation
            cards = re.findall(r"Your card is: '(\w)'", obs.text)
            if cards:
                seen.setdefault(obs.seat, cards[-1])
            options = re.findall(r"'(\[\w+\])'", obs.text.rsplit("available actions", 1)[-1])
            r = await env.step(MoveAction(message=options[0]))
    assert set(seen) == {0, 1} and seen[0] != seen[1]
    assert len(r.observation.rewards) == 2 and sum(r.observation.rewards) == 0


def test_two_seat_game_over_stateless_http(ttt: str) -> None:
    """HTTP gets a fresh env per request (OpenEnv 0.10): the game travels as seed + moves."""
    with httpx.Client(base_url=ttt, timeout=60) as http:
        r = http.post("/reset", json={"seed": 3}).json()
        moves: list[str] = []
        for move in TTT_WIN:
            assert r["done"] is False
            resp = http.post("/step", json={"action": {"message": move}, "seed": 3, "moves": moves})
            assert resp.status_code == 200, resp.text
            r = resp.json()
            moves.append(move)
            assert r["observation"]["my_moves"] == moves
        assert r["done"] is True and r["observation"]["rewards"] == [1.0, -1.0]
        over = http.post("/step", json={"action": {"message": "[5]"}, "seed": 3, "moves": moves})
        assert over.status_code >= 400 and "game is over" in over.text
        past = {"action": {"message": "[5]"}, "seed": 3, "moves": ["[0]", "[0]", "[1]"]}
        bad = http.post("/step", json=past)  # moves[1] was invalid: the game ended there
        assert bad.status_code >= 400 and "moves[2]" in bad.text
        unseeded = http.post("/step", json={"action": {"message": "[5]"}, "moves": ["[0]"]})
        assert unseeded.status_code >= 400 and "seed" in unseeded.text


async def test_one_seat_against_the_random_opponent(ttt: str) -> None:
    async with TextArenaSeatsEnv(ttt) as env:
        for seat in (0, 1):
            r = await env.reset(seed=5, seat=seat, opponent="random")
            turns = 0
            while not r.done:
                assert r.observation.current_player == seat == r.observation.seat
                free = re.findall(
                    r"'(\[\d\])'", r.observation.text.rsplit("Available Moves", 1)[-1]
                )
                r = await env.step(MoveAction(message=free[0]))
                turns += 1
            state = await env.state()
            assert turns >= 3 and r.reward == r.observation.rewards[seat]
            assert len(r.observation.rewards) == 2 and not r.observation.invalid_move
            assert state.opponent == "random" and state.held_seat == seat
            assert [s for s, _ in state.history].count(1 - seat) >= turns - 1  # it moved too


async def test_a_seed_replays_the_opponent_and_the_deal(kuhn: str) -> None:
    async def game(seed: int) -> tuple[list, list[str]]:
        async with TextArenaSeatsEnv(kuhn) as env:
            r = await env.reset(seed=seed, seat=0, opponent="random")
            texts = [r.observation.text]
            while not r.done:
                r = await env.step(
                    MoveAction(message="[call]" if "[call]" in texts[-1] else "[check]")
                )
                texts.append(r.observation.text)
            return (await env.state()).history, texts

    a, b, other = await asyncio.gather(game(21), game(21), game(22))
    assert a == b  # two sessions at once, one seed: the same cards, the same opponent moves
    assert a != other


async def test_an_invalid_move_ends_the_game_for_the_mover_only(ttt: str) -> None:
    async with TextArenaSeatsEnv(ttt) as env:
        await env.reset(seed=1)
        await env.step(MoveAction(message="[4]"))
        r = await env.step(MoveAction(message="[4]"))  # the cell is taken: seat 1 loses
        assert r.done and r.observation.invalid_move
        assert r.observation.rewards == [0.0, -1.0] and r.reward == -1.0
        with pytest.raises(Exception, match="game is over"):
            await env.step(MoveAction(message="[5]"))
        assert (await env.reset(seed=1)).observation.current_player == 0


async def test_bad_reset_arguments_leave_the_session_usable(ttt: str) -> None:
    async with TextArenaSeatsEnv(ttt) as env:
        with pytest.raises(Exception, match="seat must be"):
            await env.reset(seat=2)
        with pytest.raises(Exception, match="opponent must be one of random"):
            await env.reset(seat=0, opponent="solver")
        r = await env.reset(seed=1)
        assert r.observation.current_player == 0 and not r.done
    with serve("textarena/SimpleNegotiation-v0") as url:
        async with TextArenaSeatsEnv(url) as env:
            with pytest.raises(
                Exception, match=r"opponent: .*no built-in opponent.*without `seat`"
            ):
                await env.reset(seed=1, seat=0, opponent="random")
            r = await env.reset(seed=1)  # both seats: the game is served
            assert r.observation.seat == r.observation.current_player and r.observation.text


def test_a_bad_action_gets_a_clear_error_and_the_session_survives(ttt: str) -> None:
    from openenv.core import GenericEnvClient

    with GenericEnvClient(base_url=ttt).sync() as env:
        env.reset(seed=1)
        with pytest.raises(RuntimeError, match=r"'message': Field required"):
            env.step({"move": "[4]"})  # the field is `message`
        r = env.step({"message": "[4]"})
        assert r.observation["current_player"] == 1 and r.observation["turn"] == 1


@pytest.mark.interop
async def test_openenv_010_generic_client_plays_one_seat(ttt: str) -> None:
    """OpenEnv 0.10's own client knows nothing of seats: reset kwargs pick its seat, and every
    observation it gets is its own turn, as in a one-player env."""
    generic = pytest.importorskip("openenv.core.generic_client")
    async with generic.GenericEnvClient(base_url=ttt) as c:
        outcomes = []
        for seed in range(4):
            r = await c.reset(seed=seed, seat=1, opponent="random")
            while not r.done:
                obs = r.observation
                assert obs["current_player"] == 1 == obs["seat"]
                free = re.findall(r"'(\[\d\])'", obs["text"].rsplit("Available Moves", 1)[-1])
                r = await c.step({"message": free[-1]})
            outcomes.append(r.reward)
            assert r.reward == r.observation["rewards"][1] and not r.observation["invalid_move"]
        assert (await c.state())["held_seat"] == 1
    assert all(o in (-1.0, 0.0, 1.0) for o in outcomes)
