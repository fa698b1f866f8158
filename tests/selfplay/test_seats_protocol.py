"""A two-seat game over every transport: the WebSocket, the batch framing and stateless HTTP; and
an OpenEnv 0.10 client holding one seat (the seats protocol page says how)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from openspiel_games_env import GameAction, OpenSpielEnv

from openenv_train.client.batch import BatchTransport


class BatchEnv(OpenSpielEnv):
    batch_frames = True


async def play_both_seats(env: OpenSpielEnv, seed: int, script: list[str]) -> tuple[list, list]:
    """Hold both seats: play ``script`` (move names) for whichever seat is to move; return the
    (seat, view) pairs seen and the final rewards."""
    r = await env.reset(seed=seed)
    seen = []
    for move in script:
        obs = r.observation
        assert not r.done and obs.seat == obs.current_player
        seen.append((obs.current_player, obs.info_state, list(obs.moves)))
        r = await env.step(GameAction(move=move))
    assert r.done and r.observation.current_player is None
    return seen, list(r.observation.rewards)


@pytest.mark.parametrize("client_cls", [OpenSpielEnv, BatchEnv], ids=["ws", "batch"])
async def test_two_seat_kuhn_game_over_the_websocket(kuhn, client_cls) -> None:
    async with client_cls(kuhn.url) as env:
        seen, rewards = await play_both_seats(env, 11, ["Pass", "Bet", "Bet"])
        if client_cls is BatchEnv:
            assert isinstance(env.transport, BatchTransport)
        state = await env.state()
    # seats alternate, each view shows only its own card (the info state's first char)
    assert [s for s, _, _ in seen] == [0, 1, 0]
    assert seen[0][1] == seen[2][1][0] and seen[1][1][0] != seen[0][1][0]
    assert seen[2][1].endswith("pb") and seen[0][2] == ["Pass", "Bet"]
    # pass, bet, call: a showdown for 2 chips, zero-sum, the higher card wins
    high = 0 if int(seen[0][1][0]) > int(seen[1][1][0]) else 1
    assert rewards[high] == 2.0 and rewards[1 - high] == -2.0
    assert state.returns == rewards and state.held_seat is None and state.done


async def test_many_games_batched_over_one_connection(kuhn) -> None:
    envs = [BatchEnv(kuhn.url) for _ in range(8)]
    results = await asyncio.gather(
        *(play_both_seats(e, 100 + i, ["Bet", "Pass"]) for i, e in enumerate(envs))
    )
    assert len({id(e.transport.channel) for e in envs}) == 1
    for _, rewards in results:  # bet, fold: the bettor (seat 0) takes the ante
        assert rewards == [1.0, -1.0]
    await asyncio.gather(*(e.close() for e in envs))


def test_two_seat_game_over_stateless_http(kuhn) -> None:
    """HTTP gets a fresh env per request (OpenEnv 0.10): the game travels as seed + moves."""
    with httpx.Client(base_url=kuhn.url, timeout=30) as http:
        r = http.post("/reset", json={"seed": 11}).json()
        moves: list[str] = []
        for move in ["Pass", "Bet", "Bet"]:
            assert r["done"] is False
            r = http.post("/step", json={"action": {"move": move}, "seed": 11, "moves": moves})
            assert r.status_code == 200, r.text
            r = r.json()
            moves.append(move)
            assert r["observation"]["my_moves"] == moves
        assert r["done"] is True
        http_rewards = r["observation"]["rewards"]
        bad = http.post("/step", json={"action": {"move": "Bet"}, "seed": 11, "moves": ["Nope"]})
        assert bad.status_code >= 400 and "moves[0]" in bad.text

    async def ws() -> list[float]:
        async with OpenSpielEnv(kuhn.url) as env:
            return (await play_both_seats(env, 11, ["Pass", "Bet", "Bet"]))[1]

    assert http_rewards == asyncio.run(ws())


async def test_one_seat_against_a_built_in_opponent(kuhn, ttt) -> None:
    async with OpenSpielEnv(ttt.url) as env:
        for seat in (0, 1):
            r = await env.reset(seed=5, seat=seat, opponent="random")
            turns = 0
            while not r.done:
                assert r.observation.current_player == seat == r.observation.seat
                r = await env.step(GameAction(move=r.observation.moves[0]))
                turns += 1
            assert turns >= 3 and r.reward == r.observation.rewards[seat]
            assert (await env.state()).opponent == "random"
        with pytest.raises(Exception, match="seat must be"):
            await env.reset(seat=2)
        with pytest.raises(Exception, match="opponent must be one of"):
            await env.reset(seat=0, opponent="nobody")
        r = await env.reset(seed=1)  # the session survives bad resets
        assert r.observation.current_player == 0


async def test_an_illegal_move_loses_for_the_mover_only(ttt) -> None:
    async with OpenSpielEnv(ttt.url) as env:
        await env.reset(seed=1)
        await env.step(GameAction(move="4"))
        r = await env.step(GameAction(move="4"))  # the cell is taken
    assert r.done and r.observation.invalid_move
    assert r.observation.rewards == [0.0, -1.0] and r.reward == -1.0


@pytest.mark.interop
async def test_openenv_010_generic_client_plays_one_seat(kuhn) -> None:
    """OpenEnv 0.10's own client knows nothing of seats: reset kwargs pick its seat, and every
    observation it gets is its own turn, as in a one-player env."""
    generic = pytest.importorskip("openenv.core.generic_client")
    async with generic.GenericEnvClient(base_url=kuhn.url) as c:
        outcomes = []
        for seed in range(6):
            r = await c.reset(seed=seed, seat=1, opponent="solver")
            while not r.done:
                assert r.observation["current_player"] == 1 == r.observation["seat"]
                r = await c.step({"move": r.observation["moves"][-1]})
            outcomes.append(r.reward)
            assert r.reward == r.observation["rewards"][1]
        assert (await c.state())["held_seat"] == 1
    assert all(o in (-2.0, -1.0, 1.0, 2.0) for o in outcomes)
