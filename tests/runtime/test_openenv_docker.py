"""OpenEnv's LocalDockerProvider (``openenv_train.openenv``) on our hardened ContainerProvider, on
the real engine."""

from __future__ import annotations

import pytest

from openenv_train.openenv import ContainerNotReadyError, LocalDockerProvider
from openenv_train.openenv.client import MCPToolClient
from openenv_train.runtime import container_engine as ce


def test_openenv_calls_serve_a_hardened_container_on_loopback(image_of, no_leaks):
    provider = LocalDockerProvider()
    url = provider.start_container(image_of("docker"), env_vars={"RT_MARK": "x"})
    server = provider.server
    try:
        provider.wait_for_ready(url)
        assert url.startswith("http://127.0.0.1:")
        assert server.hardening().problems() == []
        with MCPToolClient(url).sync() as env:
            env.reset()
            assert env.call_tool("echo_message", message="hi") == "hi"
    finally:
        provider.stop_container()
    assert provider.server is None and ce.list_exact(server._client, server.name) == []
    provider.stop_container()  # idempotent


def test_from_docker_image_takes_it_and_a_dead_server_is_not_ready(image_of, no_leaks):
    with MCPToolClient.from_docker_image(
        image_of("docker"), provider=LocalDockerProvider()
    ).sync() as env:
        env.reset()
    provider = LocalDockerProvider()
    url = provider.start_container(image_of("docker"))
    provider.server.stop()  # the container is gone: not ready, and the error says so quickly
    with pytest.raises(ContainerNotReadyError, match="is not ready") as err:
        provider.wait_for_ready(url, timeout_s=30)
    assert isinstance(err.value, TimeoutError)
    provider.stop_container()
