"""OpenEnv's ``HTTPEnvServer`` on openenv-train: an env's routes registered on the user's own
FastAPI app, production mode refusing the simulation controls, the session bounds of
``ConcurrencyConfig``, the token gate and the shutdown that closes every session's env."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from openenv_train import Action, Observation, State
from openenv_train.client import GenericEnvClient
from openenv_train.core.errors import CapacityReachedError
from openenv_train.core.messages import ServerMode
from openenv_train.openenv import (
    ConcurrencyConfig,
    HTTPEnvServer,
    ServerCapacityStatus,
    create_app,
    create_web_interface_app,
)
from openenv_train.server import Environment, Limits, MCPEnvironment, tool
from openenv_train.server.serve import gated

TOKEN = "plain-app-token-0123456789"


class Add(Action):
    amount: int


class Total(Observation):
    total: int = 0


class Counter(Environment):
    closed = 0  # envs closed, over all instances (the shutdown test reads it)

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kw: Any) -> Total:
        self.total = 0
        return Total(total=0)

    def step(self, action: Add, **kw: Any) -> Total:
        self.total += action.amount
        return Total(total=self.total, reward=float(action.amount), done=self.total >= 10)

    @property
    def state(self) -> State:
        return State(step_count=self.total)

    def close(self) -> None:
        type(self).closed += 1


class Tools(MCPEnvironment):
    @tool
    def double(self, x: int) -> int:
        """Twice x."""
        return 2 * x


def plain_app(mode: str | ServerMode | None = None, **server_kwargs: Any) -> FastAPI:
    app = FastAPI()

    @app.get("/mine")
    async def mine() -> dict[str, str]:
        return {"route": "the user's own"}

    HTTPEnvServer(Counter, Add, Total, **server_kwargs).register_routes(app, mode)
    return app


def test_production_mode_refuses_simulation_controls_on_a_real_server(serve_app: Any) -> None:
    server = serve_app(plain_app(mode="production"))
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.post("/reset", json={}).status_code == 404
        assert http.post("/step", json={"action": {"amount": 1}}).status_code == 404
        assert http.get("/state").status_code == 404
        health = http.get("/health").json()
        assert health["status"] == "healthy" and health["mode"] == "production"
        assert http.get("/schema").json()["action"]["properties"]["amount"]["type"] == "integer"
        assert http.get("/metadata").json()["name"] == "Counter"
        assert http.get("/mine").json() == {"route": "the user's own"}

    async def episode() -> tuple[int, float | None]:
        async with GenericEnvClient(server.url) as env:  # a session over /ws: still served
            await env.reset()
            result = await env.step({"amount": 4})
            return result.observation["total"], result.reward

    assert asyncio.run(episode()) == (4, 4.0)


def test_production_mode_keeps_mcp_tools() -> None:
    app = FastAPI()
    HTTPEnvServer(Tools, None, None).register_routes(app, ServerMode.PRODUCTION)
    with TestClient(app) as http:
        assert http.post("/reset", json={}).status_code == 404
        call = {"name": "double", "arguments": {"x": 21}}
        reply = http.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
        ).json()
        assert reply["result"]["structuredContent"]["result"] == 42, reply


def test_simulation_mode_is_the_default_and_serves_every_route() -> None:
    with TestClient(plain_app()) as http:
        assert http.post("/reset", json={"seed": 1}).json()["observation"]["total"] == 0
        step = http.post("/step", json={"action": {"amount": 3}}).json()
        assert step["observation"]["total"] == 3 and step["reward"] == 3.0
        assert http.get("/state").status_code == 200
        assert http.get("/health").json()["mode"] == "simulation"
        bad = http.post("/step", json={"action": {"amount": "many"}})
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"][-1] == "amount"


def test_a_mode_is_a_server_mode_or_its_name() -> None:
    app = FastAPI()
    HTTPEnvServer(Counter, Add, Total).register_routes(app, ServerMode.PRODUCTION)
    paths = {getattr(r, "path", None) for r in app.routes}
    assert {"/health", "/schema", "/metadata", "/ws", "/mcp"} <= paths
    assert not {"/reset", "/step", "/state"} & paths
    with pytest.raises(ValueError, match="simulation.*production"):
        HTTPEnvServer(Counter, Add, Total).register_routes(FastAPI(), mode="staging")


def test_one_env_server_per_fastapi_app() -> None:
    app = plain_app()
    with pytest.raises(RuntimeError, match="already serves an env"):
        HTTPEnvServer(Counter, Add, Total).register_routes(app)
    with pytest.raises(TypeError, match="FastAPI"):
        HTTPEnvServer(Counter, Add, Total).register_routes(object())  # type: ignore[arg-type]


def test_max_concurrent_envs_bounds_sessions(serve_app: Any) -> None:
    env_server = HTTPEnvServer(Counter, Add, Total, max_concurrent_envs=1)
    app = FastAPI()
    env_server.register_routes(app)
    server = serve_app(app)

    async def two_sessions() -> tuple[int, Any]:
        async with GenericEnvClient(server.url) as first:
            await first.reset()
            held = env_server.get_capacity_status()
            with pytest.raises(CapacityReachedError):
                async with GenericEnvClient(server.url) as second:
                    await second.reset()
            return env_server.active_sessions, held

    active, held = asyncio.run(two_sessions())
    assert active == 1 and held.is_at_capacity and held.available_slots == 0
    assert env_server.concurrency_config == ConcurrencyConfig(max_concurrent_envs=1)


def test_concurrency_config_keeps_our_defaults_and_refuses_both_spellings() -> None:
    assert ConcurrencyConfig() == ConcurrencyConfig(max_concurrent_envs=4096, session_timeout=300)
    assert HTTPEnvServer(Counter, Add, Total).max_concurrent_envs == 4096
    with pytest.raises(ValueError, match="not both"):
        HTTPEnvServer(Counter, Add, Total, 2, ConcurrencyConfig(max_concurrent_envs=2))
    with pytest.raises(ValueError, match="max_concurrent_envs"):
        ConcurrencyConfig(max_concurrent_envs=0)
    with pytest.raises(ValueError, match="not both"):
        create_app(
            Counter, Add, Total, max_concurrent_envs=2, concurrency_config=ConcurrencyConfig()
        )
    with pytest.raises(TypeError, match="ConcurrencyConfig"):
        HTTPEnvServer(Counter, Add, Total, concurrency_config={"max_concurrent_envs": 2})  # type: ignore[arg-type]
    app = create_app(
        Counter, Add, Total, concurrency_config=ConcurrencyConfig(max_concurrent_envs=2)
    )
    with TestClient(app) as http:
        assert http.get("/health").json()["max_sessions"] == 2


def test_the_token_guards_every_route_of_a_plain_app_but_health() -> None:
    with TestClient(plain_app(token=TOKEN)) as http:
        assert http.get("/health").status_code == 200
        assert http.get("/schema").status_code == 401
        assert http.get("/mine").status_code == 401  # the app's own routes too
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert http.get("/schema", headers=auth).status_code == 200
        assert http.get("/mine", headers=auth).status_code == 200


def test_serve_gives_a_plain_apps_env_server_its_token() -> None:
    app = plain_app()
    assert gated(app, TOKEN, {}) is app  # the app's own gate now requires the token
    with TestClient(app) as http:
        assert http.get("/schema").status_code == 401
        assert http.get("/mine", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_shutdown_closes_every_sessions_env_after_the_apps_own_lifespan() -> None:
    from contextlib import asynccontextmanager

    order: list[str] = []

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> Any:
        yield
        order.append(f"app lifespan ended, {Counter.closed - before} envs closed")

    app = FastAPI(lifespan=lifespan)
    HTTPEnvServer(Counter, Add, Total).register_routes(app)
    before = Counter.closed
    with TestClient(app) as http:
        for _ in range(2):
            created = http.post(
                "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}
            ).json()
            assert "session_id" in created["result"], created
    assert order == ["app lifespan ended, 0 envs closed"]
    assert Counter.closed - before == 2


class Fresh(Observation):
    greeting: str = "hello"


def test_openenv_positional_arguments_and_the_reset_observation_schema() -> None:
    app = (
        FastAPI()
    )  # OpenEnv 0.10's order: ..., max_concurrent_envs, concurrency_config, env_name, state_cls
    HTTPEnvServer(
        Counter, Add, Total, 3, None, "counter", State, reset_observation_cls=Fresh
    ).register_routes(app)
    with TestClient(app) as http:
        schema = http.get("/schema").json()
        assert "greeting" in schema["reset_observation"]["properties"]
        assert "total" in schema["observation"]["properties"]
        assert http.get("/health").json()["max_sessions"] == 3
    with pytest.raises(TypeError, match="reset_observation_cls"):
        HTTPEnvServer(Counter, Add, Total, reset_observation_cls=dict)  # type: ignore[arg-type]


def test_create_web_interface_app_serves_the_playground_and_refuses_a_gradio_builder() -> None:
    app = create_web_interface_app(Counter, Add, Total, env_name="counter", max_concurrent_envs=2)
    with TestClient(app) as client:
        page = client.get("/web")
        assert page.status_code == 200 and "playground" in page.text.lower()
        assert client.get("/health").status_code == 200
    with pytest.raises(ValueError, match="gradio_builder.*web_renderer"):
        create_web_interface_app(Counter, Add, Total, gradio_builder=lambda *a: None)


def test_create_app_takes_openenvs_env_name_in_the_fourth_place() -> None:
    app = create_app(Counter, Add, Total, "counter-env")
    with TestClient(app) as client:
        assert client.get("/health").status_code == 200
        assert "counter-env" in app.title
    with pytest.raises(TypeError, match="multiple values for argument 'env_name'"):
        create_app(Counter, Add, Total, "a", env_name="b")  # type: ignore[misc]
    with pytest.raises(TypeError, match="state_cls="):
        create_app(Counter, Add, Total, State)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="title_override.*Gradio"):
        create_app(Counter, Add, Total, title_override="My page")


def test_create_app_keeps_our_keywords(tmp_path: Any) -> None:
    renderer = tmp_path / "draw.js"
    renderer.write_text("OpenEnvPlayground.registerRenderer(() => '');")
    app = create_app(
        Counter,
        Add,
        Total,
        "counter",
        3,
        limits=Limits(max_body_bytes=4096),
        token=TOKEN,
        metadata={"name": "counted", "description": "d"},
        web=True,
        web_renderer=renderer,
    )
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(app) as client:
        assert client.get("/health").json()["max_sessions"] == 3
        assert client.get("/metadata").status_code == 401
        assert client.get("/metadata", headers=auth).json()["name"] == "counted"
        assert "registerRenderer" in client.get("/web/renderer.js", headers=auth).text
    assert app.limits.max_body_bytes == 4096  # type: ignore[attr-defined]


def test_a_native_create_app_call_with_openenvs_keywords_names_the_native_spelling() -> None:
    from openenv_train.server import create_app as native

    with pytest.raises(
        TypeError,
        match=r"max_concurrent_envs.*limits=Limits\(max_sessions=N\).*openenv_train.openenv",
    ):
        native(Counter, Add, Total, max_concurrent_envs=2)
    with pytest.raises(TypeError, match="concurrency_config.*session_timeout_s"):
        native(Counter, Add, Total, concurrency_config=ConcurrencyConfig())
    with pytest.raises(TypeError, match="env_name.*openenv_train.openenv"):
        native(Counter, Add, Total, env_name="counter")
    with pytest.raises(TypeError, match="reset_observation_cls"):
        native(Counter, Add, Total, reset_observation_cls=Fresh)
    with pytest.raises(TypeError, match="fourth place.*openenv_train.openenv"):
        native(Counter, Add, Total, "counter")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="web=PATH"):
        native(Counter, Add, Total, web_renderer="draw.js")


def test_capacity_status_counts_against_the_limit() -> None:
    status = ServerCapacityStatus.from_counts(3, 4)
    assert status.available_slots == 1 and not status.is_at_capacity
    with pytest.raises(ValueError, match="exceeds max_sessions"):
        ServerCapacityStatus(active_sessions=5, max_sessions=4)


def test_an_http_env_server_is_the_native_routes(serve_app: Any) -> None:
    from openenv_train.server import EnvRoutes

    server = HTTPEnvServer(
        Counter, Add, Total, concurrency_config=ConcurrencyConfig(session_timeout=None)
    )
    assert isinstance(server, EnvRoutes)
    assert server.limits.session_timeout_s is None and server.limits.max_sessions == 4096
    assert server.concurrency_config == ConcurrencyConfig(session_timeout=None)
    with pytest.raises(TypeError, match="limits"):
        HTTPEnvServer(Counter, Add, Total, limits={"max_sessions": 2})  # type: ignore[arg-type]
