"""The coding env: the model submits Python source, the sandbox runs the task's tests on it.

reward = fraction of the task's tests passed by this submission, computed by the server from the
values the sandbox returns (``coding_env.grading``) and clamped to ``REWARD_RANGE``. The episode
ends when every test passes or after ``max_attempts`` submissions. Hostile code is the sandbox's
business (``coding_env.sandbox``): a run that loops, forks, floods output, exits early or writes
anything but results is a failed submission that uses its attempt, with a status saying why,
never a failed server; only a sandbox that cannot start at all is an error. Runs are bounded per server process
(``CODING_MAX_PARALLEL``, default one per usable CPU, and no more than half the container's
memory limit holds) and shared fairly between sessions (``coding_env.slots``: round-robin
across sessions, so one session's queued submissions never starve another's); steps are plain
methods, so they run in worker threads and a slow run never stalls other sessions.
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid

from openenv_train import Environment, EnvironmentMetadata, NoEpisodeError
from openenv_train.server.metrics import count_env_event

from ..grading import REWARD_RANGE
from ..models import CodeAction, CodingObservation, CodingState
from ..sandbox import Limits, default_parallel, run_tests
from ..slots import FairSlots
from ..tasks import TASKS, TASKS_BY_ID, Task

_SELF_TEST = "def add(a, b):\n    return a + b\n"
SLOTS = FairSlots(
    int(os.environ.get("CODING_MAX_PARALLEL") or default_parallel(Limits.from_env().memory_mb))
)


class CodingEnvironment(Environment[CodeAction, CodingObservation, CodingState]):
    """Write a Python function that passes the task's unit tests."""

    metadata = EnvironmentMetadata(
        name="coding_env",
        description="Submit Python source for a small function; it runs against unit tests in a "
        "sandboxed subprocess; reward = fraction of tests passed.",
        version="0.1.0",
    )
    #: step waits on a sandboxed subprocess: always in a worker thread, never on the event loop
    inline_sync_calls = False
    #: seconds one self-test's verdict stands (``/health`` asks often; a run costs ~40 ms)
    SELF_TEST_EVERY_S = 5.0
    _self_test: tuple[float, str | None] = (float("-inf"), None)
    _self_test_lock = threading.Lock()

    @classmethod
    def check_ready(cls) -> str | None:
        """The env's self-test for ``/health``: one honest submission through the sandbox must
        score 1.0 within 4 s (a server whose limits were lowered, whose pids are exhausted or
        whose sandbox cannot start is not ready, whatever its event loop says)."""
        with cls._self_test_lock:
            at, verdict = cls._self_test
            if time.monotonic() - at < cls.SELF_TEST_EVERY_S:
                return verdict
            task = TASKS_BY_ID["add"]
            limits = Limits(cpu_seconds=2, wall_seconds=4.0)
            try:
                result = run_tests(_SELF_TEST, task.tests, limits)
            except Exception as exc:  # noqa: BLE001 - any failure is the answer
                verdict = f"the sandbox self-test failed: {type(exc).__name__}: {exc}"[:500]
            else:
                ok = (result.status, result.fraction) == ("ok", 1.0)
                verdict = (
                    None
                    if ok
                    else f"the sandbox self-test got {result.status}: {result.errors[:2]}"
                )
            cls._self_test = (time.monotonic(), verdict)
            return verdict

    def __init__(self) -> None:
        self._limits = Limits.from_env()
        self._rng = random.Random()
        self._task: Task | None = None
        self._seed: int | None = None
        self._episode_id: str | None = None
        self._attempts = 0
        self._max_attempts = 1
        self._best = 0.0
        self._done = False

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        max_attempts: int = 1,
    ) -> CodingObservation:
        if task_id is not None and task_id not in TASKS_BY_ID:
            raise ValueError(
                f"task_id {task_id!r} is not a task; use one of {', '.join(sorted(TASKS_BY_ID))}"
            )
        if (
            isinstance(max_attempts, bool)
            or not isinstance(max_attempts, int)
            or not 1 <= max_attempts <= 10
        ):
            raise ValueError(f"max_attempts must be an integer in 1..10, got {max_attempts!r}")
        rng = random.Random(seed) if seed is not None else self._rng
        self._task = TASKS_BY_ID[task_id] if task_id else rng.choice(TASKS)
        self._seed, self._episode_id = seed, episode_id or uuid.uuid4().hex
        self._attempts, self._max_attempts, self._best, self._done = 0, max_attempts, 0.0, False
        task = self._task
        return CodingObservation(
            task_id=task.id,
            function=task.function,
            prompt=f"Write a Python function {task.prompt}",
            total=len(task.tests),
            attempts_left=max_attempts,
            reward=0.0,
        )

    def step(self, action: CodeAction) -> CodingObservation:
        task = self._task
        if task is None:
            raise NoEpisodeError("no task: call reset() before submitting code")
        if self._done:
            raise NoEpisodeError("the episode is over (done=True): call reset() for a new task")
        with SLOTS.hold(self):  # this session's turn
            result = run_tests(action.code, task.tests, self._limits)
        count_env_event("sandbox_run", result.status)  # the server's /metrics: runs by status
        self._attempts += 1
        low, high = REWARD_RANGE
        reward = min(high, max(low, result.fraction))
        self._best = max(self._best, reward)
        self._done = result.passed == result.total or self._attempts >= self._max_attempts
        return CodingObservation(
            task_id=task.id,
            function=task.function,
            passed=result.passed,
            total=result.total,
            status=result.status,
            errors=result.errors,
            output=result.output,
            attempts_left=self._max_attempts - self._attempts,
            reward=round(reward, 6),
            done=self._done,
            metadata={
                "network": result.network,
                "filesystem": result.filesystem,
                "seconds": result.seconds,
            },
        )

    def state(self) -> CodingState:
        return CodingState(
            episode_id=self._episode_id,
            step_count=self._attempts,
            seed=self._seed,
            task_id=self._task.id if self._task else "",
            attempts=self._attempts,
            best_fraction=self._best,
            done=self._done,
        )
