"""Faults on real server processes: killed, frozen (SIGSTOP) and restarted mid-rollout, clients
that vanish mid-request, 10,000 abrupt disconnects. Never a wrong reward, never a leaked
session, memory back near its high-water mark."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import struct
import threading
import time

import httpx
import psutil
import pytest
from blackjack_env import BlackjackAction, BlackjackEnv, basic_strategy
from server_helpers import http_request, masked_frame, raw_ws_connect, until, wait_until

from openenv_train.core import InfrastructureError
from openenv_train.runtime import LocalProcessProvider

pytestmark = pytest.mark.timeout(300)

APP = "blackjack_env.server.app:app"


def _active(url: str) -> int:
    return httpx.get(url + "/health", timeout=10).json()["active_sessions"]


async def _episode(client: BlackjackEnv, seed: int) -> tuple[list[int], float]:
    result = await client.reset(seed=seed)
    actions: list[int] = []
    while not result.done and len(actions) < 10:
        obs = result.observation
        action = basic_strategy(obs.player_total, obs.soft, obs.dealer_upcard)
        actions.append(int(action))
        result = await client.step(BlackjackAction(action=action))
    return actions, float(result.reward or 0.0)


async def _replay(url: str, seed: int, actions: list[int]) -> float:
    async with BlackjackEnv(url) as ref:
        result = await ref.reset(seed=seed)
        for a in actions:
            result = await ref.step(BlackjackAction(action=a))
        assert result.done
        return float(result.reward or 0.0)


async def test_killed_frozen_restarted_server_never_gives_a_wrong_reward():
    victim = LocalProcessProvider(APP)
    url = [victim.start()]
    done: list[tuple[int, list[int], float]] = []
    errors: list[BaseException] = []
    stop = asyncio.Event()
    seeds = iter(range(10**6))

    async def player() -> None:
        client = BlackjackEnv(url[0], timeout=1.0, connect_timeout=2.0)
        try:
            while not stop.is_set():
                if client.base_url != url[0]:  # the server was restarted elsewhere
                    await client.close()
                    client = BlackjackEnv(url[0], timeout=1.0, connect_timeout=2.0)
                seed = next(seeds)
                try:
                    actions, reward = await _episode(client, seed)
                except InfrastructureError as exc:  # a fault is an error, never a reward
                    errors.append(exc)
                    await asyncio.sleep(0.05)
                    continue
                done.append((seed, actions, reward))
        finally:
            await client.close()

    with LocalProcessProvider(APP) as reference:
        players = [asyncio.ensure_future(player()) for _ in range(8)]
        try:
            await until(lambda: len(done) >= 16, 30.0, "episodes served before the faults")
            os.kill(victim.pid, signal.SIGSTOP)  # frozen: clients time out (1 s) and drop
            await until(
                lambda: len(errors) >= 8, 30.0, "every player timed out on the frozen server"
            )
            frozen_errors = len(errors)
            os.kill(victim.pid, signal.SIGCONT)
            served_frozen = len(done)
            await until(lambda: len(done) > served_frozen + 8, 30.0, "episodes after the thaw")
            # the sessions of clients that gave up on the frozen server are freed once it thaws
            await asyncio.to_thread(
                wait_until, lambda: _active(url[0]) <= 8, 15.0, "timed-out sessions freed"
            )
            before_kill = len(done)
            errors_before_kill = len(errors)
            os.kill(victim.pid, signal.SIGKILL)  # killed mid-episode
            await until(
                lambda: len(errors) > errors_before_kill, 30.0, "errors from the killed server"
            )
            victim.stop()
            restarted = LocalProcessProvider(APP)
            url[0] = restarted.start()  # restarted: the players move over
            served_restart = len(done)
            await until(lambda: len(done) > served_restart + 8, 30.0, "episodes after the restart")
        finally:
            stop.set()
            await asyncio.gather(*players, return_exceptions=True)
        try:
            assert frozen_errors > 0 and len(errors) > frozen_errors
            assert len(done) > before_kill > 0  # served before, between and after the faults
            assert all(isinstance(e, InfrastructureError) for e in errors)
            for seed, actions, reward in random.Random(0).sample(done, min(len(done), 150)):
                assert reward == await _replay(reference.base_url, seed, actions), seed
            wait_until(lambda: _active(url[0]) == 0, what="sessions freed after the run")
        finally:
            restarted.stop()


def _vanish(sock: socket.socket) -> None:
    """Close with RST (no FIN, no close frame): the client is simply gone."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_clients_vanishing_mid_request_free_their_sessions():
    with LocalProcessProvider(APP) as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        for i in range(300):
            sock = raw_ws_connect(port)  # a session with one reset done
            if i % 3 == 0:
                sock.sendall(masked_frame(b'{"type": "step", "data": {"action": 1}}'))
            elif i % 3 == 1:
                sock.sendall(masked_frame(b'{"type": "step", "data": {"action": 1}}')[:9])
            else:
                sock.sendall(http_request("POST", "/step", b'{"action": {"act'))
            _vanish(sock)
        with socket.create_connection(("127.0.0.1", port)) as sock:  # HTTP body cut short
            sock.sendall(http_request("POST", "/step", headers={"Content-Length": "1000"}))
            sock.sendall(b'{"action": ')
            _vanish(sock)
        wait_until(lambda: _active(server.base_url) == 0, what="sessions freed")
        assert "Traceback" not in server.logs(200)


def _rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


def _disconnect_storm(port: int, n: int, threads: int = 4) -> None:
    def worker(count: int, seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(count):
            kind = rng.randrange(4)
            try:
                if kind == 0:  # connect and vanish
                    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                elif kind == 1:  # half a request head
                    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                    sock.sendall(b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n")
                elif kind == 2:  # a session, then gone mid-request
                    sock = raw_ws_connect(port)
                    sock.sendall(masked_frame(b'{"type": "step", "data": {"action": 0}}'))
                else:  # a session, then gone mid-frame
                    sock = raw_ws_connect(port)
                    sock.sendall(masked_frame(b'{"type": "state"}')[:5])
                _vanish(sock)
            except OSError:
                pass  # the listen backlog is full for a moment; that is fine

    per = n // threads
    pool = [threading.Thread(target=worker, args=(per, i)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()


def test_ten_thousand_abrupt_disconnects_leak_nothing():
    with LocalProcessProvider(APP) as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        t0 = time.monotonic()
        _disconnect_storm(port, 5_000)
        wait_until(lambda: _active(server.base_url) == 0, timeout=60, what="sessions freed")
        high_water = _rss_mb(server.pid)
        _disconnect_storm(port, 5_000)
        wait_until(lambda: _active(server.base_url) == 0, timeout=60, what="sessions freed")
        after = _rss_mb(server.pid)
        took = time.monotonic() - t0
        assert after <= high_water * 1.10 + 16, (high_water, after)  # no growth per connection
        assert took < 240, took
        assert asyncio.run(_replay(server.base_url, 1, [1])) in (-1.0, 0.0, 1.0, 1.5)  # serves
        assert "Traceback" not in server.logs(200)
