"""HTTP routes of create_app against a real uvicorn server on loopback."""

from __future__ import annotations

import httpx
import pytest
from server_envs import (
    REG,
    AddAction,
    CounterEnv,
    CounterState,
    PropertyStateEnv,
    TotalObservation,
    failing_factory,
)

from openenv_train.core import EnvironmentMetadata
from openenv_train.server import Limits, create_app

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server(serve_app):
    return serve_app(create_app(CounterEnv, AddAction, TotalObservation, CounterState))


def test_health_metadata_schema(server):
    health = httpx.get(server.url + "/health").json()
    assert health["status"] == "healthy"
    assert health["active_sessions"] == 0 and health["max_sessions"] == 4096
    assert health["mode"] == "simulation"

    meta = httpx.get(server.url + "/metadata").json()
    assert meta["name"] == "CounterEnv"
    assert meta["description"].startswith("Adds numbers")
    assert set(meta) == {
        "name",
        "description",
        "readme_content",
        "version",
        "author",
        "documentation_url",
    }

    schema = httpx.get(server.url + "/schema").json()
    assert set(schema) == {"action", "observation", "reset_observation", "state"}
    assert schema["action"]["properties"]["n"]["description"] == "how much to add"
    assert "total" in schema["observation"]["properties"]
    assert "total" in schema["state"]["properties"]


def test_metadata_comes_from_the_env(serve_app):
    class Described(CounterEnv):
        metadata = EnvironmentMetadata(name="counter", description="d", version="1.2")

    s = serve_app(create_app(Described, AddAction, TotalObservation))
    assert httpx.get(s.url + "/metadata").json()["version"] == "1.2"


def test_stateless_reset_step_state(server):
    r = httpx.post(server.url + "/reset", json={"seed": 5, "episode_id": "e1"})
    assert r.status_code == 200
    assert r.json() == {
        "observation": {"metadata": {}, "total": 5, "seed": 5},
        "reward": None,
        "done": False,
    }
    assert httpx.post(server.url + "/reset").json()["observation"]["total"] == 0

    # Stateless like OpenEnv 0.10: each call builds a fresh env and closes it.
    r = httpx.post(server.url + "/step", json={"action": {"n": 3}, "timeout_s": 5})
    assert r.status_code == 200
    assert r.json()["observation"]["total"] == 3 and r.json()["reward"] == 3.0
    assert httpx.get(server.url + "/state").json() == {
        "episode_id": None,
        "step_count": 0,
        "total": 0,
    }
    assert REG.created == REG.closed == 4


def test_step_422_names_the_field(server):
    r = httpx.post(server.url + "/step", json={"action": {"m": 1}})
    assert r.status_code == 422
    locs = {tuple(e["loc"]) for e in r.json()["detail"]}
    assert locs == {("body", "action", "n"), ("body", "action", "m")}

    r = httpx.post(server.url + "/step", json={"nope": 1})
    assert r.status_code == 422
    assert ["body", "action"] in [e["loc"] for e in r.json()["detail"]]

    r = httpx.post(server.url + "/reset", json={"seed": -1})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "seed"]


def test_env_exception_is_500_with_message_and_server_survives(server):
    r = httpx.post(server.url + "/step", json={"action": {"n": 1, "fail": True}})
    assert r.status_code == 500
    assert r.json()["detail"] == {
        "code": "EXECUTION_ERROR",
        "message": "RuntimeError: asked to fail",
    }
    assert httpx.get(server.url + "/health").status_code == 200
    assert REG.closed == REG.created  # the env was still closed


def test_factory_error_is_503(serve_app):
    s = serve_app(create_app(failing_factory, AddAction, TotalObservation))
    r = httpx.post(s.url + "/reset", json={})
    assert r.status_code == 503
    assert r.json()["detail"]["code"] == "FACTORY_ERROR"
    assert "no env for you" in r.json()["detail"]["message"]


def test_property_state(serve_app):
    s = serve_app(create_app(PropertyStateEnv, AddAction, TotalObservation, CounterState))
    assert httpx.get(s.url + "/state").json()["episode_id"] == "prop"


@pytest.mark.parametrize("how", ["argument", "env_var"])
def test_production_mode_removes_simulation_routes(serve_app, monkeypatch, how):
    if how == "argument":
        app = create_app(CounterEnv, AddAction, TotalObservation, mode="production")
    else:
        monkeypatch.setenv("OPENENV_MODE", "production")
        app = create_app(CounterEnv, AddAction, TotalObservation)
    s = serve_app(app)
    assert httpx.post(s.url + "/reset", json={}).status_code in (404, 405)
    assert httpx.post(s.url + "/step", json={"action": {"n": 1}}).status_code in (404, 405)
    assert httpx.get(s.url + "/state").status_code == 404
    assert httpx.get(s.url + "/health").json()["mode"] == "production"
    assert httpx.get(s.url + "/schema").status_code == 200
    assert httpx.get(s.url + "/metadata").status_code == 200
    rpc = {"jsonrpc": "2.0", "method": "nope", "id": 1}
    assert httpx.post(s.url + "/mcp", json=rpc).json()["error"]["code"] == -32601


def test_bad_arguments_fail_early_with_the_fix(monkeypatch):
    with pytest.raises(TypeError, match="not MyEnv\\(\\)"):
        create_app(CounterEnv(), AddAction, TotalObservation)
    with pytest.raises(TypeError, match="observation_cls"):
        create_app(CounterEnv, AddAction, dict)
    with pytest.raises(ValueError, match="max_sessions"):
        create_app(CounterEnv, AddAction, TotalObservation, limits=Limits(max_sessions=0))
    with pytest.raises(ValueError, match="session_timeout_s"):
        create_app(CounterEnv, AddAction, TotalObservation, limits=Limits(session_timeout_s=-1))
    with pytest.raises(TypeError, match="limits=Limits"):
        create_app(CounterEnv, AddAction, TotalObservation, limits={"max_sessions": 2})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mode='debug'"):
        create_app(CounterEnv, AddAction, TotalObservation, mode="debug")
    monkeypatch.setenv("OPENENV_MODE", "prod")
    with pytest.raises(ValueError, match="OPENENV_MODE"):
        create_app(CounterEnv, AddAction, TotalObservation)


def test_http_step_without_a_game_is_409_pointing_to_sessions(serve_app):
    """HTTP /reset then /step: the step runs on a fresh env (each request gets its own, as in
    OpenEnv 0.10). The real BlackJack env has no game there; the client learns why and where to
    go, instead of a bare 500."""
    from blackjack_env.server.app import app

    s = serve_app(app)
    assert httpx.post(s.url + "/reset", json={"seed": 1}).status_code == 200
    r = httpx.post(s.url + "/step", json={"action": {"action": "hit"}})
    assert r.status_code == 409, r.text
    detail = r.json()["detail"]
    assert detail["code"] == "NO_EPISODE"
    for words in ("fresh env", "/ws", "/mcp", "openenv/session/create", "call reset()"):
        assert words in detail["message"], (words, detail["message"])
    # a real env bug on HTTP /step stays a 500 (tested above); the server still serves
    assert httpx.get(s.url + "/health").json()["status"] == "healthy"
