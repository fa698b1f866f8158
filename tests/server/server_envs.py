"""Small envs used by the server tests (real envs, real servers; nothing is mocked)."""

from __future__ import annotations

import asyncio
import threading

from pydantic import Field

from openenv_train.core import Action, Observation, State
from openenv_train.server import Environment, MCPEnvironment, tool


class AddAction(Action):
    n: int = Field(description="how much to add")
    block: bool = False
    fail: bool = False


class TotalObservation(Observation):
    total: int = 0
    seed: int | None = None


class CounterState(State):
    total: int = 0


class Registry:
    """What the envs did, shared with the test (the server runs in this process)."""

    def __init__(self) -> None:
        self.created = 0
        self.building = 0  # slow constructors under way or done (a test waits on builds starting)
        self.closed = 0
        self.release = threading.Event()
        self.entered = threading.Event()
        self.lock = threading.Lock()

    def reset(self) -> None:
        self.__init__()


REG = Registry()


class CounterEnv(Environment[AddAction, TotalObservation, CounterState]):
    """Adds numbers. Used to test sessions, errors and isolation."""

    #: its ``block`` action waits on an event: like any env that may block, it says so
    inline_sync_calls = False

    def __init__(self) -> None:
        with REG.lock:
            REG.created += 1
        self.total = 0
        self.steps = 0
        self.episode_id: str | None = None

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> TotalObservation:
        self.total = seed or 0
        self.steps = 0
        self.episode_id = episode_id
        return TotalObservation(total=self.total, seed=seed)

    def step(self, action: AddAction) -> TotalObservation:
        if action.fail:
            raise RuntimeError("asked to fail")
        if action.block:
            REG.entered.set()
            if not REG.release.wait(30):
                raise TimeoutError("test never released the blocked step")
        self.total += action.n
        self.steps += 1
        return TotalObservation(total=self.total, reward=float(action.n), done=self.total >= 100)

    def state(self) -> CounterState:
        return CounterState(episode_id=self.episode_id, step_count=self.steps, total=self.total)

    def close(self) -> None:
        with REG.lock:
            REG.closed += 1


class AsyncCounterEnv(CounterEnv):
    """The same env with coroutine methods (awaited on the loop)."""

    gate: asyncio.Event | None = None

    async def reset(
        self, seed: int | None = None, episode_id: str | None = None
    ) -> TotalObservation:  # type: ignore[override]
        await asyncio.sleep(0)
        return CounterEnv.reset(self, seed, episode_id)

    async def step(self, action: AddAction) -> TotalObservation:  # type: ignore[override]
        if action.fail:
            raise ValueError("async env asked to fail")
        self.total += action.n
        self.steps += 1
        return TotalObservation(total=self.total, reward=float(action.n))

    async def state(self) -> CounterState:  # type: ignore[override]
        return CounterState(episode_id=self.episode_id, step_count=self.steps, total=self.total)

    async def close(self) -> None:  # type: ignore[override]
        with REG.lock:
            REG.closed += 1


class PropertyStateEnv(CounterEnv):
    """OpenEnv style: ``state`` is a property."""

    @property  # type: ignore[override]
    def state(self) -> CounterState:
        return CounterState(episode_id="prop", step_count=self.steps, total=self.total)


class InlineCounterEnv(CounterEnv):
    """Opts into on-loop sync calls from the first call."""

    inline_sync_calls = True


def failing_factory() -> CounterEnv:
    raise RuntimeError("no env for you")


class GameTools(MCPEnvironment):
    """A tool env with state, to test MCP over /ws and /mcp."""

    def __init__(self) -> None:
        with REG.lock:
            REG.created += 1
        self.score = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> Observation:
        self.score = 0
        return Observation(metadata={"ready": True})

    @tool
    def add(self, a: int, b: int = 1) -> int:
        """Add two numbers and bank the sum.

        Args:
            a: the first number
            b: the second number,
                defaults to one
        """
        self.score += a + b
        return a + b

    @tool(name="shout")
    async def loud(self, text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    @tool
    def explode(self) -> None:
        """Always raises."""
        raise ValueError("boom")

    @tool
    def get_score(self) -> dict:
        """The banked score."""
        return {"score": self.score}

    def on_tool_result(self, observation):  # type: ignore[no-untyped-def]
        observation.reward = float(self.score)
        return observation

    def close(self) -> None:
        with REG.lock:
            REG.closed += 1


class NoteAction(Action):
    text: str = Field(description="a note to echo back")


class NoteEnv(Environment[NoteAction, Observation, State]):
    """Echoes a text field (for tests of strings: surrogates, huge values)."""

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> Observation:
        return Observation()

    def step(self, action: NoteAction) -> Observation:
        return Observation(metadata={"echo": action.text})

    @property
    def state(self) -> State:
        return State()
