"""EnvClient against our own create_app server on loopback (real processes, real sockets)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import httpx
import psutil
import pytest
from client_servers import serve
from ot_apps import TAction, TObservation, TState
from ports import held_port
from processes import exited
from server_helpers import until

from openenv_train.client import (
    EnvClient,
    GenericEnvClient,
    ServerUnreachableError,
)
from openenv_train.core import (
    ActionValidationError,
    CapacityReachedError,
    ConnectionLostError,
    EnvExecutionError,
    EnvInfrastructureError,
    ErrorCode,
    InfrastructureError,
    RequestTimeoutError,
    SessionClosedError,
)
from openenv_train.runtime import LocalProcessProvider, connect_to, connect_to_sync


class TClient(EnvClient[TAction, TObservation, TState]):
    action_cls, observation_cls, state_cls = TAction, TObservation, TState


async def test_reset_step_state_close(ot_url: str) -> None:
    async with TClient(ot_url) as env:
        r = await env.reset(seed=5, episode_id="ep-1")
        assert isinstance(r.observation, TObservation)
        assert r.observation.echoed_message == "ready seed=5"
        assert (r.reward, r.done) == (0.0, False)
        r = await env.step(TAction(message="hello"))
        assert (r.observation.echoed_message, r.reward, r.done) == ("hello", 5.0, False)
        assert (await env.step(TAction(message="bye"))).done is True
        state = await env.state()
        assert isinstance(state, TState)
        assert (state.episode_id, state.step_count, state.seed, state.last_message) == (
            "ep-1",
            2,
            5,
            "bye",
        )
    assert not env.connected


async def test_error_frames_are_typed_and_the_session_survives(ot_url: str) -> None:
    async with TClient(ot_url) as env:
        await env.reset(seed=1)
        with pytest.raises(EnvExecutionError) as exc:
            await env.step(TAction(message="no", fail=True))
        assert exc.value.code == ErrorCode.EXECUTION_ERROR
        assert "env refused message 'no'" in exc.value.message
        assert not isinstance(exc.value, InfrastructureError)
        # an InfrastructureError the env raises stays one across the wire: retried, never scored
        with pytest.raises(EnvInfrastructureError) as infra:
            await env.step(TAction(message="x", infra=True))
        assert isinstance(infra.value, InfrastructureError)
        assert infra.value.code == ErrorCode.EXECUTION_ERROR  # what OpenEnv's clients read
        assert "the sandbox behind this env went away" in infra.value.message
        assert (await env.step(TAction(message="still here"))).observation.step_count == 1
    async with httpx.AsyncClient() as http:  # the stateless HTTP route says so too
        reply = await http.post(ot_url + "/step", json={"action": {"message": "x", "infra": True}})
        assert reply.status_code == 500
        assert reply.json()["detail"]["infrastructure"] is True
    async with GenericEnvClient(ot_url) as raw:
        await raw.reset()
        with pytest.raises(ActionValidationError) as exc:
            await raw.step({"mesage": "typo"})
        assert exc.value.code == ErrorCode.VALIDATION_ERROR
        fields = {str(loc) for e in exc.value.errors for loc in e.get("loc", ())}
        assert "mesage" in fields or "message" in fields
        assert (await raw.step({"message": "ok"})).observation["echoed_message"] == "ok"


async def test_timeout_drops_the_session_and_never_mismatches_replies(
    ot_url: str, tmp_path: Path
) -> None:
    """OpenEnv #1143: after a timeout, a later call must never receive the earlier reply."""
    env = TClient(ot_url, timeout=0.5)
    await env.reset(seed=3)
    done = tmp_path / "slow-step-done"
    with pytest.raises(RequestTimeoutError, match="reset\\(\\)"):
        await env.step(TAction(message="slow", sleep_s=1.5, done_file=str(done)))
    assert isinstance(RequestTimeoutError("x"), InfrastructureError)
    with pytest.raises(SessionClosedError, match="reset\\(\\)"):
        await env.step(TAction(message="fast"))
    with pytest.raises(SessionClosedError):
        await env.state()
    # the slow reply now exists server-side; it must never reach us
    await until(done.exists, 20, "the slow step to end on the server")
    r = await env.reset(seed=9)
    assert r.observation.echoed_message == "ready seed=9"
    r = await env.step(TAction(message="fast"))
    assert (r.observation.echoed_message, r.observation.step_count) == ("fast", 1)
    state = await env.state()
    assert (state.seed, state.step_count) == (9, 1)
    await env.close()


async def test_cancelled_request_drops_the_session(ot_url: str) -> None:
    async with TClient(ot_url) as env:
        await env.reset(seed=1)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(env.step(TAction(message="slow", sleep_s=1.0)), 0.2)
        with pytest.raises(SessionClosedError, match="cancelled"):
            await env.step(TAction(message="next"))
        assert (await env.reset(seed=2)).observation.echoed_message == "ready seed=2"


async def test_one_session_refuses_overlapping_requests(ot_url: str) -> None:
    async with TClient(ot_url) as env:
        await env.reset()
        results = await asyncio.gather(
            env.step(TAction(message="a", sleep_s=0.2)),
            env.step(TAction(message="b")),
            return_exceptions=True,
        )
        assert results[0].observation.echoed_message == "a"
        assert isinstance(results[1], RuntimeError) and "one client per concurrent session" in str(
            results[1]
        )


async def test_many_concurrent_sessions_stay_isolated(ot_url: str) -> None:
    async def episode(i: int) -> None:
        async with TClient(ot_url) as env:
            assert (await env.reset(seed=i)).observation.echoed_message == f"ready seed={i}"
            for k in range(3):
                r = await env.step(TAction(message=f"{i}-{k}"))
                assert (r.observation.echoed_message, r.observation.step_count) == (
                    f"{i}-{k}",
                    k + 1,
                )
            assert (await env.state()).seed == i

    await asyncio.gather(*(episode(i) for i in range(64)))


async def test_capacity_reached_is_typed_and_close_frees_the_slot(ot_cap_url: str) -> None:
    first = await TClient(ot_cap_url).connect()
    await first.reset()
    second = TClient(ot_cap_url)
    with pytest.raises(CapacityReachedError) as exc:
        await second.reset()
    assert exc.value.code == ErrorCode.CAPACITY_REACHED
    assert exc.value.data.get("max_sessions") == 1
    with pytest.raises(SessionClosedError):
        await second.step(TAction(message="x"))
    await first.close()
    for _ in range(50):  # the server frees the slot when it processes our close
        try:
            assert (await second.reset(seed=4)).observation.echoed_message == "ready seed=4"
            break
        except CapacityReachedError:
            await asyncio.sleep(0.05)
    else:
        pytest.fail("the closed session's slot was never freed")
    await second.close()


async def test_server_death_raises_connection_lost() -> None:
    with serve("ot_apps:app") as provider:
        async with TClient(provider.base_url) as env:
            await env.reset()
            with pytest.raises(ConnectionLostError, match="step\\(\\)"):
                await env.step(TAction(message="die", crash=True))
            with pytest.raises(SessionClosedError, match="reset\\(\\)"):
                await env.step(TAction(message="again"))
            with pytest.raises(ServerUnreachableError):
                await env.reset()


async def test_unreachable_server_is_a_clear_error() -> None:
    with held_port() as port:  # held, not listening: connections are refused
        with pytest.raises(ServerUnreachableError, match=f"127.0.0.1:{port}"):
            await TClient(f"http://127.0.0.1:{port}", connect_timeout=5).connect()


def test_bad_arguments_name_the_field_and_the_fix() -> None:
    with pytest.raises(ValueError, match="base_url"):
        TClient("ftp://example")
    with pytest.raises(ValueError, match="timeout"):
        TClient("http://127.0.0.1:1", timeout=0)


async def test_bad_call_arguments(ot_url: str) -> None:
    async with TClient(ot_url) as env:
        with pytest.raises(ValueError, match="seed"):
            await env.reset(seed=-1)
        with pytest.raises(TypeError, match="TAction.*GenericEnvClient"):
            await env.step({"message": "dict"})  # type: ignore[arg-type]
        assert (await env.reset(seed=0)).observation.echoed_message == "ready seed=0"


async def test_close_then_reset_opens_a_fresh_session(ot_url: str) -> None:
    env = TClient(ot_url)
    await env.reset(seed=1)
    await env.step(TAction(message="a"))
    await env.close()
    with pytest.raises(SessionClosedError, match="close"):
        await env.step(TAction(message="b"))
    await env.reset(seed=2)
    assert (await env.state()).step_count == 0
    await env.close()


def test_sync_wrapper_outside_a_loop(ot_url: str) -> None:
    with TClient(ot_url).sync() as env:
        assert env.reset(seed=7).observation.echoed_message == "ready seed=7"
        assert env.step(TAction(message="hi")).reward == 2.0
        assert env.state().step_count == 1


async def test_sync_wrapper_inside_a_running_loop_and_from_threads(ot_url: str) -> None:
    """Jupyter runs user code inside a live event loop; blocking calls must still work."""
    asyncio.get_running_loop()
    with TClient(ot_url).sync() as env:
        assert env.reset(seed=8).observation.echoed_message == "ready seed=8"
        assert env.step(TAction(message="in-loop")).observation.step_count == 1

    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            with TClient(ot_url).sync() as env:
                env.reset(seed=i)
                assert env.step(TAction(message=str(i))).observation.echoed_message == str(i)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors


async def test_sync_wrapper_timeout_then_reset(ot_url: str) -> None:
    with TClient(ot_url, timeout=0.3).sync() as env:
        env.reset(seed=1)
        with pytest.raises(RequestTimeoutError):
            env.step(TAction(message="slow", sleep_s=1.0))
        with pytest.raises(SessionClosedError):
            env.state()
        assert env.reset(seed=2).observation.echoed_message == "ready seed=2"


def test_sync_requires_an_unconnected_client(ot_url: str) -> None:
    async def connected() -> TClient:
        return await TClient(ot_url).connect()

    env = asyncio.run(connected())
    with pytest.raises(RuntimeError, match="before connecting"):
        env.sync()


async def test_connect_to_stops_its_server_on_close() -> None:
    from blackjack_env import BlackjackAction, BlackjackEnv

    provider = LocalProcessProvider("blackjack_env.server.app:app")
    env = await connect_to(provider, BlackjackEnv, timeout=10)
    pid = provider.pid
    assert pid is not None and psutil.pid_exists(pid)
    r = await env.reset(seed=11)
    while not r.done:
        r = await env.step(BlackjackAction(action=1))
    assert r.reward in (-1.0, 0.0, 1.0)
    await env.close()
    assert exited(pid)
    with pytest.raises(SessionClosedError, match="server stopped"):
        await env.reset()


async def test_connect_to_stops_the_server_if_connect_fails() -> None:
    provider = serve("ot_apps:app")

    class NoWs(TClient):
        async def connect(self):  # the server is up but this client cannot open a session
            raise ServerUnreachableError("refused for the test")

    with pytest.raises(ServerUnreachableError):
        await connect_to(provider, NoWs)
    assert not provider.running


def test_connect_to_sync_for_blocking_code() -> None:
    from blackjack_env import BlackjackAction, BlackjackEnv

    provider = LocalProcessProvider("blackjack_env.server.app:app")
    with connect_to_sync(provider, BlackjackEnv) as env:
        pid = provider.pid
        r = env.reset(seed=3)
        while not r.done:
            r = env.step(BlackjackAction(action=1))
        assert r.reward in (-1.0, 0.0, 1.0)
    assert exited(pid)


async def _reaped(url: str) -> None:
    """Waits (bounded) until the server has reaped every session."""
    async with httpx.AsyncClient() as http:
        deadline = asyncio.get_running_loop().time() + 15
        while (await http.get(url + "/health")).json()["active_sessions"]:
            assert asyncio.get_running_loop().time() < deadline, "the idle session was not reaped"
            await asyncio.sleep(0.05)


async def _closing_server(reason: str, hold: asyncio.Event) -> asyncio.Server:
    """A WebSocket peer on loopback (``websockets``' sans-I/O server over a raw socket) that
    answers one reset, then sends a close frame with ``reason`` and keeps the TCP connection
    open until ``hold`` is set: the client sits in the closing state meanwhile."""
    from websockets.frames import Opcode
    from websockets.server import ServerProtocol

    from openenv_train.core.wire import observation_frame_json

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        proto = ServerProtocol()

        async def next_event() -> object:
            while not (events := proto.events_received()):
                proto.receive_data(await reader.read(65536))
            return events[0]

        request = await next_event()
        proto.send_response(proto.accept(request))
        writer.write(b"".join(proto.data_to_send()))
        frame = await next_event()
        assert frame.opcode is Opcode.TEXT and b'"reset"' in frame.data
        proto.send_text(observation_frame_json(TObservation(echoed_message="ready")).encode())
        proto.send_close(1000, reason)
        writer.write(b"".join(proto.data_to_send()))
        await writer.drain()
        await hold.wait()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def test_a_close_still_closing_names_the_servers_reason() -> None:
    """The server's close reason reaches the error while the TCP connection is still closing
    (``websockets`` reports no close code until the socket is gone, which read as "no close
    frame": the idle-reaper test's flake on a busy machine)."""
    hold = asyncio.Event()
    server = await _closing_server("session idle timeout", hold)
    port = server.sockets[0].getsockname()[1]
    try:
        async with TClient(f"http://127.0.0.1:{port}") as env:
            await env.reset(seed=1)
            deadline = asyncio.get_running_loop().time() + 10
            while env._transport.usable:  # the close frame arrives
                assert asyncio.get_running_loop().time() < deadline, "no close frame came"
                await asyncio.sleep(0.01)
            with pytest.raises(ConnectionLostError, match="close code 1000: session idle timeout"):
                await env.step(TAction(message="late"))
    finally:
        hold.set()
        server.close()
        await server.wait_closed()


async def test_a_session_reaped_while_idle() -> None:
    """A step on a reaped session fails clearly; a reset (episode boundary) just reconnects."""
    with serve("ot_apps:idle_app") as provider:
        async with TClient(provider.base_url) as env:
            await env.reset(seed=1)
            await _reaped(provider.base_url)  # idle past session_timeout=0.5
            with pytest.raises(ConnectionLostError, match="idle"):
                await env.step(TAction(message="late"))
            assert (await env.reset(seed=2)).observation.echoed_message == "ready seed=2"
            await _reaped(provider.base_url)
            assert (await env.reset(seed=3)).observation.echoed_message == "ready seed=3"
            assert (await env.step(TAction(message="ok"))).observation.step_count == 1
