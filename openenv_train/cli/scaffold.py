"""``openenv-train init NAME``: an env package that passes its own tests and builds as generated.

The example env is a counter (``add`` an int; reward is the new total, done at ``target``), small
enough to read in a minute and complete: typed models, env, server app, client, Dockerfile, tests.
Each module takes the library's names from ``openenv_train`` alone (one import for env authors).
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path

from .dockerfile_writer import render as render_dockerfile

NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


def check_name(name: str) -> str:
    if not NAME_RE.match(name) or keyword.iskeyword(name):
        raise ValueError(
            f"NAME {name!r}: use a Python package name: lowercase letters, digits, '_' "
            "(e.g. my_env)"
        )
    return name


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_") if part)


FILES: dict[str, str] = {
    "pyproject.toml": """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.1.0"
description = "{name}: an OpenEnv-compatible environment."
readme = "README.md"
requires-python = ">=3.10"
dependencies = ["openenv-train"]

[project.optional-dependencies]
test = ["pytest>=8"]  # python -m pytest tests

[tool.setuptools.packages.find]
include = ["{name}*"]
""",
    "README.md": """\
# {name}

A counter env made by `openenv-train init`: `reset()` starts at 0, `step(add=N)` adds N, the reward
is the new total and the episode ends when the total reaches `target` (default 10).

    openenv-train serve .                      # local process on 127.0.0.1:8000
    python -m pytest tests                     # its own tests (pytest: pip install pytest)
    openenv-train build . --tag {name}:latest  # the image (multi-stage, non-root)
    openenv-train serve . --runtime docker     # the image in a hardened container
    openenv-train validate {name}:latest       # static, runtime and hardening checks
""",
    "{name}/__init__.py": """\
\"\"\"{name}: typed models, the client, and the server app in ``{name}.server.app``.\"\"\"

from .client import {Camel}Env
from .models import {Camel}Action, {Camel}Observation, {Camel}State

__all__ = ["{Camel}Action", "{Camel}Env", "{Camel}Observation", "{Camel}State"]
""",
    "{name}/models.py": """\
\"\"\"Typed action, observation and state (shared by server and client).\"\"\"

from __future__ import annotations

from pydantic import Field

from openenv_train import Action, Observation, State


class {Camel}Action(Action):
    \"\"\"``add``: the integer to add to the counter (-100..100).\"\"\"

    add: int = Field(ge=-100, le=100, description="the integer to add to the counter")


class {Camel}Observation(Observation):
    total: int = 0
    target: int = 10


class {Camel}State(State):
    total: int = 0
""",
    "{name}/client.py": """\
\"\"\"``{Camel}Env``: the typed client (``async with``; ``.sync()`` blocks).\"\"\"

from __future__ import annotations

from openenv_train import EnvClient

from .models import {Camel}Action, {Camel}Observation, {Camel}State


class {Camel}Env(EnvClient[{Camel}Action, {Camel}Observation, {Camel}State]):
    action_cls = {Camel}Action
    observation_cls = {Camel}Observation
    state_cls = {Camel}State
""",
    "{name}/server/__init__.py": '"""The server side of {name}: the env and its ASGI app."""\n',
    "{name}/server/environment.py": """\
\"\"\"The env itself: one instance per session.\"\"\"

from __future__ import annotations

import uuid

from openenv_train import Environment

from ..models import {Camel}Action, {Camel}Observation, {Camel}State


class {Camel}Environment(Environment[{Camel}Action, {Camel}Observation, {Camel}State]):
    \"\"\"A counter: ``add`` moves it; reward is the new total; done at ``target``.\"\"\"

    def __init__(self) -> None:
        self._total, self._target, self._steps, self._episode = 0, 10, 0, ""

    async def reset(self, seed=None, episode_id=None, target: int = 10, **kwargs) -> {Camel}Observation:
        self._total, self._target, self._steps = 0, int(target), 0
        self._episode = episode_id or uuid.uuid4().hex
        return {Camel}Observation(total=0, target=self._target, done=False, reward=0.0)

    async def step(self, action: {Camel}Action, **kwargs) -> {Camel}Observation:
        self._total += action.add
        self._steps += 1
        done = self._total >= self._target
        return {Camel}Observation(
            total=self._total, target=self._target, done=done, reward=float(self._total)
        )

    async def state(self) -> {Camel}State:
        return {Camel}State(episode_id=self._episode, step_count=self._steps, total=self._total)
""",
    "{name}/server/app.py": """\
\"\"\"ASGI app: ``openenv-train serve {name}.server.app:app`` (or ``uvicorn ...``).\"\"\"

from __future__ import annotations

import os

from openenv_train import Limits, create_app

from ..models import {Camel}Action, {Camel}Observation, {Camel}State
from .environment import {Camel}Environment

app = create_app(
    {Camel}Environment,
    {Camel}Action,
    {Camel}Observation,
    {Camel}State,
    limits=Limits.from_env(max_sessions=int(os.environ.get("MAX_SESSIONS", "4096"))),
)
""",
    "tests/test_{name}.py": """\
\"\"\"{name} on a real server process on loopback.\"\"\"

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from openenv_train import EnvServerError
from openenv_train.runtime import LocalProcessProvider

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from {name} import {Camel}Action, {Camel}Env  # noqa: E402


@pytest.fixture(scope="module")
def url():
    env = {{"PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}}
    with LocalProcessProvider("{name}.server.app:app", env=env) as server:
        yield server.base_url


def test_reset_step_until_done(url):
    with {Camel}Env(base_url=url).sync() as env:
        result = env.reset(target=5)
        assert result.observation.total == 0 and not result.done
        result = env.step({Camel}Action(add=3))
        assert result.observation.total == 3 and result.reward == 3.0 and not result.done
        result = env.step({Camel}Action(add=2))
        assert result.done and result.reward == 5.0
        assert env.state().total == 5


def test_a_bad_action_is_an_error_and_the_session_survives(url):
    with {Camel}Env(base_url=url).sync() as env:
        env.reset()
        with pytest.raises((EnvServerError, ValueError)):
            env.step({Camel}Action.model_construct(add=1000))
        assert env.step({Camel}Action(add=1)).observation.total == 1
""",
    ".dockerignore": ".venv\n**/__pycache__\n*.egg-info\nbuild\ndist\n",
}


def scaffold(name: str, dest: Path) -> list[Path]:
    """Write the package ``name`` into ``dest`` (must not exist or be empty); returns the files."""
    check_name(name)
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} exists and is not empty; pick another --dir or NAME")
    values = {"name": name, "Camel": _camel(name), "dist": name.replace("_", "-")}
    written = []
    files = {rel.format(**values): text.format(**values) for rel, text in FILES.items()}
    files["Dockerfile"] = render_dockerfile(name)
    for rel, body in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
        written.append(path)
    return written
