"""``/metrics`` on a real env server: the figures follow what clients did, per server."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from observe_envs import TickAction, TickEnv, TickObservation
from prometheus_client.parser import text_string_to_metric_families
from server_helpers import ServerThread
from websockets.sync.client import connect

from openenv_train import Limits, create_app
from openenv_train.core import State

TOKEN = "metrics-test-token"


def scrape(
    url: str, token: str | None = TOKEN
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``url``/metrics, keyed by (name, sorted labels)."""
    req = urllib.request.Request(url + "/metrics")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.headers["Content-Type"].startswith("text/plain")
        text = r.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def sample(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def rpc(ws: Any, frame: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps(frame))
    return json.loads(ws.recv())


@pytest.fixture
def server() -> Any:
    app = create_app(
        TickEnv, TickAction, TickObservation, State, limits=Limits(max_sessions=2), token=TOKEN
    )
    srv = ServerThread(app).start()
    yield srv
    srv.stop()


def _ws(srv: ServerThread, **kw: Any) -> Any:
    return connect(srv.ws_url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, **kw)


def test_metrics_need_the_token(server: ServerThread) -> None:
    with pytest.raises(urllib.error.HTTPError) as err:
        scrape(server.url, token=None)
    assert err.value.code == 401
    assert sample(scrape(server.url), "openenv_server_sessions_max", env="TickEnv") == 2


def test_metrics_follow_sessions_frames_errors_and_refusals(server: ServerThread) -> None:
    env = {"env": "TickEnv"}
    with _ws(server) as ws:
        assert rpc(ws, {"type": "reset", "data": {}})["type"] == "observation"
        for _ in range(5):
            assert rpc(ws, {"type": "step", "data": {"n": 1}})["type"] == "observation"
        assert (
            rpc(ws, {"type": "step", "data": {"fail": True}})["data"]["code"] == "EXECUTION_ERROR"
        )
        assert rpc(ws, {"type": "nope"})["data"]["code"] == "UNKNOWN_TYPE"
        with _ws(server) as second, _ws(server) as third:  # max_sessions=2: the third is refused
            assert rpc(second, {"type": "reset", "data": {}})["type"] == "observation"
            assert json.loads(third.recv())["data"]["code"] == "CAPACITY_REACHED"
        scrape(server.url)  # counted once answered: the next scrape shows it
        got = scrape(server.url)
        assert sample(got, "openenv_server_sessions_open", **env) >= 1
        assert sample(got, "openenv_server_frames_total", type="step", outcome="ok", **env) == 5
        assert sample(got, "openenv_server_frames_total", type="step", outcome="error", **env) == 1
        assert sample(got, "openenv_server_errors_total", code="EXECUTION_ERROR", **env) == 1
        assert sample(got, "openenv_server_errors_total", code="UNKNOWN_TYPE", **env) == 1
        assert sample(got, "openenv_server_sessions_refused_total", reason="capacity", **env) == 1
        assert sample(got, "openenv_server_sessions_opened_total", kind="ws", **env) == 2
        assert sample(got, "openenv_server_frame_seconds_count", type="step", **env) == 6
        assert (
            sample(got, "openenv_server_frame_seconds_bucket", type="step", le="+Inf", **env) == 6
        )
        calls = sum(
            sample(got, "openenv_server_env_calls_total", mode=m, **env)
            for m in ("inline", "thread", "async")
        )
        assert calls == 8  # 2 resets + 6 steps (the one that raised was made too)
        # the env's own events: totals 1..5 are odd, even, odd, even, odd
        assert (
            sample(got, "openenv_server_env_events_total", event="tick", status="odd", **env) == 3
        )
        assert (
            sample(got, "openenv_server_env_events_total", event="tick", status="even", **env) == 2
        )
        assert sample(got, "openenv_server_message_bytes_count", **env) >= 8
        assert (
            sample(
                got,
                "openenv_server_requests_total",
                route="/metrics",
                method="GET",
                status="2xx",
                **env,
            )
            >= 1
        )


def test_batch_frames_are_counted_per_message(server: ServerThread) -> None:
    with _ws(server, subprotocols=["openenv-train.batch.v1"]) as ws:
        frames = [{"session": k, "type": "reset", "data": {}} for k in (1, 2)]
        ws.send(json.dumps({"type": "batch", "frames": frames}))
        seen = 0
        while seen < 2:
            seen += len(json.loads(ws.recv())["frames"])
        got = scrape(server.url)
    assert sample(got, "openenv_server_batch_frames_count", env="TickEnv") == 1
    assert sample(got, "openenv_server_batch_frames_sum", env="TickEnv") == 2
    assert (
        sample(got, "openenv_server_frames_total", type="reset", outcome="ok", env="TickEnv") == 2
    )


def test_two_servers_in_one_process_keep_their_own_figures() -> None:
    apps = [create_app(TickEnv, TickAction, TickObservation, State, token=TOKEN) for _ in range(2)]
    servers = [ServerThread(app).start() for app in apps]
    try:
        with _ws(servers[0]) as ws:
            rpc(ws, {"type": "reset", "data": {}})
            rpc(ws, {"type": "step", "data": {"n": 1}})
        first, second = (scrape(s.url) for s in servers)
        key = {"type": "step", "outcome": "ok", "env": "TickEnv"}
        assert sample(first, "openenv_server_frames_total", **key) == 1
        assert sample(second, "openenv_server_frames_total", **key) == 0
    finally:
        for s in servers:
            s.stop()


def test_family_members_are_labelled_apart() -> None:
    """A family's apps (``functools.partial(EnvClass, member)``) each label their own series."""
    import functools

    from openenv_train.server.metrics import env_label

    assert env_label(TickEnv, "TickEnv") == "TickEnv"
    apps = [
        create_app(
            functools.partial(MemberEnv, member), TickAction, TickObservation, State, token=TOKEN
        )
        for member in ("first", "second")
    ]
    servers = [ServerThread(app).start() for app in apps]
    try:
        with _ws(servers[1]) as ws:
            rpc(ws, {"type": "reset", "data": {}})
            rpc(ws, {"type": "step", "data": {"n": 1}})
        first, second = (scrape(s.url) for s in servers)
        key = {"type": "step", "outcome": "ok"}
        assert sample(second, "openenv_server_frames_total", env="MemberEnv/second", **key) == 1
        assert sample(first, "openenv_server_sessions_max", env="MemberEnv/first") > 0
        assert not any(dict(labels).get("env") == "MemberEnv/second" for _, labels in first)
    finally:
        for s in servers:
            s.stop()


class MemberEnv(TickEnv):
    """A family member: the family's env class with the member's name."""

    def __init__(self, member: str) -> None:
        super().__init__()
        self.member = member


def test_the_coding_env_counts_its_sandbox_runs_by_status() -> None:
    from coding_env.models import CodeAction, CodingObservation, CodingState
    from coding_env.server.environment import CodingEnvironment

    app = create_app(CodingEnvironment, CodeAction, CodingObservation, CodingState, token=TOKEN)
    server = ServerThread(app).start()
    try:
        with _ws(server) as ws:
            assert rpc(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
            reply = rpc(ws, {"type": "step", "data": {"code": "def f(:\n"}})
            status = reply["data"]["observation"]["status"]
            got = scrape(server.url)
        assert (
            sample(
                got,
                "openenv_server_env_events_total",
                env="CodingEnvironment",
                event="sandbox_run",
                status=status,
            )
            == 1
        )
    finally:
        server.stop()


def test_mcp_websocket_messages_are_counted() -> None:
    from echo_env.models import EchoObservation
    from echo_env.server.environment import EchoEnvironment

    from openenv_train import CallToolAction

    app = create_app(EchoEnvironment, CallToolAction, EchoObservation, State, token=TOKEN)
    server = ServerThread(app).start()
    try:
        url = server.ws_url.replace("/ws", "/mcp")
        with connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
            assert "result" in rpc(ws, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert "error" in rpc(ws, {"jsonrpc": "2.0", "id": 2, "method": "no/such"})
            got = scrape(server.url)
        env = {"env": "EchoEnvironment", "type": "mcp_ws"}
        assert sample(got, "openenv_server_frames_total", outcome="ok", **env) == 1
        assert sample(got, "openenv_server_frames_total", outcome="error", **env) == 1
        assert sample(got, "openenv_server_frame_seconds_count", **env) == 2
    finally:
        server.stop()


def test_power_of_two_buckets_are_exact_at_their_bounds() -> None:
    from openenv_train.server.metrics import Pow2Histogram, pow2_buckets

    hist = Pow2Histogram()
    for value in (0, 1, 2, 3, 4, 5, 64, 65, 1 << 40):
        hist.observe(value)
    got = dict(pow2_buckets(hist.counts, (0, 1, 2, 6, 7)))
    # le=1 holds 0 and 1; le=2 adds 2; le=4 adds 3 and 4; le=64 adds 5 and 64; 65 by le=128
    assert got == {"1.0": 2, "2.0": 3, "4.0": 5, "64.0": 7, "128.0": 8, "+Inf": 9}
    assert hist.total == sum((0, 1, 2, 3, 4, 5, 64, 65, 1 << 40))
    assert dict(pow2_buckets(hist.counts, (4,), 1e6)) == {"1.6e-05": 6, "+Inf": 9}
    # frame latency: nanoseconds in microsecond buckets, exact at 16 us either side
    from openenv_train.server.metrics import KindStats

    step = KindStats("step")
    for took_ns in (0, 999, 16_000, 16_001, 32_000):
        step.observe(took_ns)
    assert dict(pow2_buckets(step.latency_us, (4, 5), 1e6)) == {
        "1.6e-05": 3,
        "3.2e-05": 5,
        "+Inf": 5,
    }
    assert step.total_ns == 0 + 999 + 16_000 + 16_001 + 32_000
