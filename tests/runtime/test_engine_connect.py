"""One API-version negotiation per engine and process: Podman answers ``/version`` by querying
the package manager (0.4 s of CPU), which a pool paid at every container start."""

from __future__ import annotations

import pytest
from rt_containers import ENGINES

from openenv_train.runtime import container_engine as ce


@pytest.mark.parametrize("engine", ENGINES)
def test_later_clients_reuse_the_negotiated_api_version(engine, monkeypatch):
    from docker.api.client import APIClient

    asked = []
    negotiate = APIClient._retrieve_server_version
    monkeypatch.setattr(
        APIClient, "_retrieve_server_version", lambda self: asked.append(1) or negotiate(self)
    )
    monkeypatch.setattr(ce, "_API_VERSIONS", {})
    clients = [ce.connect(engine) for _ in range(3)]
    assert len(asked) == 1  # the first client only
    assert len({c.api.api_version for c in clients}) == 1
    for client in clients:  # each one works
        assert isinstance(client.containers.list(), list)
        client.close()
