"""Fixtures: OpenSpiel game servers (real uvicorn on loopback, OS-picked ports), one per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openspiel_games_env.server.apps import app_for
from server_helpers import ServerThread


def _serve(game: str) -> Iterator[ServerThread]:
    s = ServerThread(app_for(game)).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def kuhn() -> Iterator[ServerThread]:
    yield from _serve("kuhn_poker")


@pytest.fixture(scope="module")
def ttt() -> Iterator[ServerThread]:
    yield from _serve("tic_tac_toe")
