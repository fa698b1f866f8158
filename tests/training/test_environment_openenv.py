"""environment_factory against a server built and served by the real OpenEnv 0.10."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest
from child_env import with_pythonpath

from openenv_train.training import make_environment_class

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def openenv_url() -> Iterator[str]:
    from openenv_train.runtime import LocalProcessProvider

    with LocalProcessProvider(
        "oe_tools_app:app", env=with_pythonpath(HERE), startup_timeout=180
    ) as p:
        yield p.base_url


def test_openenv_fastmcp_tools_become_methods(openenv_url: str) -> None:
    from transformers.utils import get_json_schema

    cls = make_environment_class(openenv_url, name="OETools")
    sig = inspect.signature(cls.add)
    assert list(sig.parameters) == ["self", "a", "b"]
    assert sig.parameters["a"].annotation is int and sig.parameters["b"].default == 1
    env = cls()
    assert env.reset(seed=1) is None
    assert env.add(2, b=5) == "7"
    assert env.add(a=2) == "3"
    assert env.shout(text="hi") == "HI"
    schema = get_json_schema(env.add)["function"]
    assert schema["parameters"]["required"] == ["a"]
    assert schema["parameters"]["properties"]["a"]["type"] == "integer"
