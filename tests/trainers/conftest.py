"""Real BlackJack/echo servers on loopback and a tiny Llama, shared by the trainer tests."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
if importlib.util.find_spec("blackjack_env") is None:  # not pip-installed yet: use the source tree
    src = str(ROOT / "envs" / "blackjack_env")
    sys.path.insert(0, src)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the recipes package


@pytest.fixture(scope="module")
def blackjack_servers() -> Iterator[list[str]]:
    from openenv_train.runtime import start_local_servers

    group = start_local_servers("blackjack_env.server.app:app", 2, startup_timeout=120)
    try:
        yield group.base_urls
    finally:
        group.stop()


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    from openenv_train.runtime import LocalProcessProvider

    with LocalProcessProvider("echo_env.server.app:app", startup_timeout=120) as p:
        yield p.base_url


@pytest.fixture()
def tiny_model():
    import torch

    torch.set_num_threads(1)
    from openenv_train.policy.tiny import build_blackjack_model

    return build_blackjack_model()
