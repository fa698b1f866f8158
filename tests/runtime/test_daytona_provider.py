"""DaytonaProvider against a FAKE Daytona SDK (``fake_daytona``: the cloud cannot be reached from
tests) whose sandboxes run real env servers on loopback: a real client resets and steps through
the provider, and the failures (no SDK, no key, create refused, a server that dies or never
answers) are clear, bounded, and leave nothing running."""

from __future__ import annotations

import sys
import time

import fake_daytona
import httpx
import psutil
import pytest
from processes import gone

from openenv_train import CallToolAction
from openenv_train.client import MCPToolClient
from openenv_train.core.errors import ServerStartError
from openenv_train.openenv.client import MCPToolClient as OpenEnvMCPToolClient
from openenv_train.runtime import DaytonaProvider, connect_to_sync, start_servers
from openenv_train.runtime.daytona import SandboxError, SandboxTimeoutError

ECHO_APP = "echo_env.server.app:app"
KEY = "dtn_test-key-0123456789"


@pytest.fixture
def cloud(monkeypatch):
    """The fake SDK in place of ``daytona``; every sandbox is killed at the end, whatever happened."""
    monkeypatch.setitem(sys.modules, "daytona", fake_daytona.module())
    monkeypatch.setenv("DAYTONA_API_KEY", KEY)
    DaytonaProvider._dockerfile_registry.clear()
    yield fake_daytona.FakeDaytona
    for sandbox in fake_daytona.FakeDaytona.sandboxes:
        sandbox.kill()


def test_a_client_resets_and_steps_through_a_sandbox(cloud):
    provider = DaytonaProvider("org/echo-env:latest", app=ECHO_APP, startup_timeout=60)
    with connect_to_sync(provider, MCPToolClient, mode="simulation") as env:
        (sandbox,) = cloud.sandboxes
        assert provider.base_url == f"http://127.0.0.1:{sandbox.port}"  # the signed URL
        env.reset()
        result = env.step(CallToolAction(tool_name="echo_message", arguments={"message": "hi"}))
        assert result.observation.result == "hi"
        pid = sandbox.server_pid()
        assert pid is not None and psutil.pid_exists(pid)
        assert "openenv_train.runtime.launch" in " ".join(sandbox.commands)
        assert provider.running and provider.preview_expires_at > time.time()
    assert sandbox.deleted and gone(pid) and provider.base_url is None  # closed: deleted


def test_from_docker_image_takes_it_as_openenvs_provider(cloud):
    """OpenEnv's call, unchanged: the image goes to start_container, kwargs too."""
    handle = OpenEnvMCPToolClient.from_docker_image(
        "org/echo-env:latest", provider=DaytonaProvider(app=ECHO_APP)
    )
    with handle.sync() as env:
        env.reset()
        assert env.call_tool("echo_message", message="via openenv") == "via openenv"
    assert cloud.sandboxes[0].deleted


def test_an_openenv_image_is_served_from_its_openenv_yaml(cloud):
    cloud.images["openenv/echo:latest"] = {"app/env/openenv.yaml": f"name: echo\napp: {ECHO_APP}\n"}
    provider = DaytonaProvider(api_key=KEY)
    url = provider.start_container("openenv/echo:latest")
    try:
        provider.wait_for_ready(url, timeout_s=60)
        assert httpx.get(url + "/health").status_code == 200
        launched = " ".join(cloud.sandboxes[0].commands)
        assert f"cd /app/env && python -m uvicorn {ECHO_APP}" in launched
    finally:
        provider.stop_container()
    assert cloud.sandboxes[0].deleted


def test_a_dockerfile_is_sent_without_buildkit_mounts_and_its_cmd_serves(cloud, tmp_path):
    (tmp_path / "server").mkdir()
    (tmp_path / "pyproject.toml").write_text("")
    dockerfile = tmp_path / "server" / "Dockerfile"
    dockerfile.write_text(
        "FROM python:3.11-slim\n"
        "COPY pyproject.toml /app/\n"
        "RUN --mount=type=cache,target=/root/.cache/pip \\\n    pip install /app\n"
        'HEALTHCHECK CMD ["python3", "-c", "print(1)"]\n'
        f'CMD ["python3", "-m", "openenv_train.runtime.launch", "--app", "{ECHO_APP}", '
        '"--host", "0.0.0.0", "--port", "8000"]\n'
    )
    image = DaytonaProvider.image_from_dockerfile(str(dockerfile))  # context: <env>/ (server/..)
    assert image == f"dockerfile:{dockerfile.resolve()}"
    with DaytonaProvider(image, startup_timeout=60) as provider:
        assert httpx.get(provider.base_url + "/health").status_code == 200
        sent = cloud.sandboxes[0].params.image.dockerfile
        assert "--mount" not in sent and "pip install /app" in sent
    assert list(tmp_path.rglob("*.dockerfile")) == []  # the stripped copy was removed


def test_a_dockerfile_reading_outside_its_context_is_refused(cloud, tmp_path):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM python:3.11\nCOPY ../secrets /app/\n")
    with pytest.raises(ValueError, match="outside context_dir"):
        DaytonaProvider.image_from_dockerfile(str(dockerfile))
    with pytest.raises(ValueError, match="No registered Dockerfile metadata"):
        DaytonaProvider(startup_timeout=5).start_container(f"dockerfile:{dockerfile}")
    assert cloud.sandboxes == []


def test_without_the_sdk_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "daytona", None)  # not installed
    with pytest.raises(ImportError, match="pip install daytona"):
        DaytonaProvider(api_key=KEY)


def test_without_an_api_key_the_error_names_the_variable(cloud, monkeypatch):
    monkeypatch.delenv("DAYTONA_API_KEY")
    monkeypatch.delenv("DAYTONA_JWT_TOKEN", raising=False)
    with pytest.raises(ValueError, match="DAYTONA_API_KEY"):
        DaytonaProvider("org/echo-env:latest")
    p = DaytonaProvider(api_key=KEY)  # given: it goes to the SDK, never into text
    assert p._daytona.config.api_key == KEY and KEY not in repr(p)
    with pytest.raises(ValueError, match="startup_timeout"):
        DaytonaProvider(api_key=KEY, startup_timeout=0)


def test_a_refused_create_is_a_sandbox_error_naming_the_image(cloud):
    cloud.refuse = "quota exceeded"
    with pytest.raises(SandboxError, match="org/echo-env:latest.*quota exceeded") as err:
        DaytonaProvider("org/echo-env:latest", app=ECHO_APP).start()
    assert isinstance(err.value, ServerStartError) and isinstance(err.value, RuntimeError)
    assert KEY not in str(err.value)


def test_a_server_that_dies_is_reported_at_once_with_its_log(cloud):
    provider = DaytonaProvider("org/echo-env:latest", app="no_such_module:app")
    started = time.monotonic()
    with pytest.raises(SandboxError, match="Server process died") as err:
        provider.start()  # the default startup_timeout is 120 s: a dead server does not wait it out
    assert time.monotonic() - started < 60
    message = str(err.value)
    assert "no_such_module" in message and cloud.sandboxes[0].id in message
    url = f"http://127.0.0.1:{cloud.sandboxes[0].port}"
    assert url not in message and KEY not in message  # the signed URL is a secret too
    assert cloud.sandboxes[0].deleted and provider.base_url is None


def test_a_server_that_never_answers_times_out_and_is_deleted(cloud):
    provider = DaytonaProvider("org/echo-env:latest", cmd="sleep 300", startup_timeout=1)
    with pytest.raises(SandboxTimeoutError, match="did not become ready") as err:
        provider.start()
    assert isinstance(err.value, TimeoutError)
    (sandbox,) = cloud.sandboxes
    assert sandbox.deleted and gone(sandbox.server_pid())


def test_a_public_sandbox_requires_a_token_that_our_clients_send(cloud):
    provider = DaytonaProvider("org/echo-env:latest", app=ECHO_APP, public=True)
    with connect_to_sync(provider, MCPToolClient) as env:
        params = cloud.sandboxes[0].params
        assert params.public is True and params.env_vars["OPENENV_TRAIN_TOKEN"] == provider.token
        env.reset()
        assert env.call_tool("echo_message", message="ok") == "ok"
        assert httpx.post(provider.base_url + "/reset", json={}).status_code == 401


def test_only_port_8000_and_one_sandbox_at_a_time(cloud):
    provider = DaytonaProvider(api_key=KEY, cmd="sleep 300")
    with pytest.raises(ValueError, match="only supports port 8000"):
        provider.start_container("org/echo-env:latest", port=3000)
    provider.start_container("org/echo-env:latest")
    provider.start_container("org/echo-env:latest")  # the first is deleted, not leaked
    first, second = cloud.sandboxes
    assert first.deleted and not second.deleted
    provider.stop()
    provider.stop()  # idempotent
    assert second.deleted


def test_start_servers_runs_one_sandbox_per_server_and_stops_all(cloud):
    with start_servers(ECHO_APP, 2, runtime="daytona", image="org/echo-env:latest") as group:
        assert len(set(group.base_urls)) == 2 and len(cloud.sandboxes) == 2
        for url in group.base_urls:
            with MCPToolClient(url).sync() as env:
                env.reset()
                assert env.call_tool("echo_message", message=url) == url
    assert all(s.deleted for s in cloud.sandboxes)
    with pytest.raises(SandboxError, match="Server process died"):
        start_servers("no_such_module:app", 2, runtime="daytona", image="org/echo-env:latest")
    assert all(s.deleted for s in cloud.sandboxes)
    with pytest.raises(ValueError, match="needs image"):
        start_servers(ECHO_APP, 1, runtime="daytona")
