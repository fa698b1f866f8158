"""``HarborEnv``: one Harbor task per episode, in a fresh container, driven through four tools.

``reset(task_id=...)`` (or ``seed``: the sorted tasks' ``seed % n``-th) takes a fresh container
of the task from the runtime's warm pool and answers its ``instruction.md``. Tools: ``run`` (a
bash command, bounded time and output), ``read_file``, ``write_file``, ``submit``. ``submit``
grades the work with the task's ``tests/test.sh`` (see ``harbor_env.verifier``) and ends the
episode with the reward; so does any call after the step budget (``max_steps``) or the task's
``[agent] timeout_sec`` has run out. The container is removed when the episode ends.

Engine failures and broken verifiers raise ``TaskInfraError``s out of ``step`` (an error frame
the client turns back into that type): never a reward of 0.
"""

from __future__ import annotations

import base64
import random
import shlex
import time
import uuid
from typing import Any

from openenv_train import (
    Action,
    CallToolAction,
    CallToolObservation,
    MCPEnvironment,
    Observation,
    tool,
)

from ..errors import TaskInfraError
from ..models import HarborObservation, HarborState
from ..rubric import VerifierRubric
from ..runtime import TaskRuntime
from ..sandbox import run_in
from ..verifier import Verdict, verify

MAX_OUTPUT_BYTES = 16 * 1024
MAX_FILE_BYTES = 64 * 1024
MAX_COMMAND_S = 120.0
DEFAULT_MAX_STEPS = 50


class HarborEnv(MCPEnvironment):
    """A terminal task in Harbor's format: act with shell commands and files, then submit."""

    inline_sync_calls = False
    #: The runtime a server's sessions share (``bind`` makes a class with one).
    runtime: TaskRuntime

    def __init__(self, runtime: TaskRuntime | None = None) -> None:
        super().__init__()
        if runtime is not None:
            self.runtime = runtime
        self.lease: Any = None
        self.task: Any = None
        self.verdict: Verdict | None = None
        self.max_steps = DEFAULT_MAX_STEPS
        self.deadline = 0.0
        self._infra: TaskInfraError | None = None
        self._state = HarborState(episode_id=None, step_count=0)

    @classmethod
    def bind(cls, runtime: TaskRuntime) -> type[HarborEnv]:
        """A subclass whose instances share ``runtime`` (what ``create_app`` takes)."""
        return type(cls.__name__, (cls,), {"runtime": runtime, "__doc__": cls.__doc__})

    # ---- episode ------------------------------------------------------------------------------

    async def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        max_steps: int | None = None,
        **kwargs: Any,
    ) -> HarborObservation:
        await self._release()
        names = sorted(self.runtime.tasks)
        if task_id is None:
            task_id = names[seed % len(names)] if seed is not None else random.choice(names)
        self.runtime.task(task_id)  # an unknown name fails here, before any container
        if max_steps is not None and not (isinstance(max_steps, int) and 1 <= max_steps <= 1000):
            raise ValueError(f"max_steps: an int in 1..1000, got {max_steps!r}")
        self.max_steps = max_steps or DEFAULT_MAX_STEPS
        self.lease = await self.runtime.call(self.runtime.lease, task_id)
        task = self.runtime.task(task_id)  # now with its users settled from its image
        self.task, self.verdict = task, None
        self.deadline = time.monotonic() + task.agent_timeout_s
        self._state = HarborState(
            episode_id=episode_id or uuid.uuid4().hex, step_count=0, task_id=task_id
        )
        return HarborObservation(
            task_id=task_id,
            instruction=task.instruction,
            tool_names=[t.name for t in self.list_tools()],
            reward=None,
        )

    def state(self) -> HarborState:
        return self._state

    async def step_async(  # type: ignore[override]
        self, action: Action, timeout_s: float | None = None, **kwargs: Any
    ) -> Observation:
        if isinstance(action, CallToolAction):
            if self.lease is None:
                raise RuntimeError("no episode running: call reset() (the last one has ended)")
            self._state.step_count += 1
            out_of_budget = (
                self._state.step_count > self.max_steps or time.monotonic() > self.deadline
            )
            if out_of_budget and action.tool_name != "submit":
                obs = CallToolObservation(
                    tool_name=action.tool_name,
                    result="the step budget or the task's time is used up: graded as it stands",
                )
                await self._grade()
                return self._finish(obs)
        obs = await super().step_async(action, timeout_s, **kwargs)
        await self._raise_infra()
        return obs

    async def invoke_tool(  # type: ignore[override]
        self, name: str, arguments: dict[str, Any] | None = None, timeout_s: float | None = None
    ) -> CallToolObservation:
        obs = await super().invoke_tool(name, arguments, timeout_s)
        await self._raise_infra()
        return obs

    def on_tool_result(self, observation: CallToolObservation) -> CallToolObservation:
        return self._finish(observation) if self.verdict is not None else observation

    def _finish(self, obs: CallToolObservation) -> CallToolObservation:
        assert self.verdict is not None
        obs.metadata["rewards"] = dict(self.verdict.rewards)
        obs.metadata["test_output"] = self.verdict.output
        self.rubric = VerifierRubric(sorted(self.verdict.rewards))
        obs.reward = self.rubric(None, obs)
        obs.done = True
        self._state.verified = True
        lease, self.lease = self.lease, None
        if lease is not None:
            lease.release()  # the pool removes this container and keeps a fresh one warm
        return obs

    async def _grade(self) -> None:
        self.verdict = await self._call(verify, self.runtime.client, self._name(), self.task)

    async def _raise_infra(self) -> None:
        err, self._infra = self._infra, None
        if err is not None:
            await self._release()
            raise err

    async def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await self.runtime.call(fn, *args, **kwargs)
        except TaskInfraError as err:
            self._infra = err
            raise

    def _name(self) -> str:
        if self.lease is None:
            raise RuntimeError("no episode running: call reset() (the last one has ended)")
        return self.lease.provider.name

    async def _release(self) -> None:
        lease, self.lease = self.lease, None
        if lease is not None:
            await self.runtime.call(lease.release)

    async def close(self) -> None:  # type: ignore[override]
        await self._release()

    # ---- tools --------------------------------------------------------------------------------

    @tool
    async def run(self, command: str, timeout_s: float = 30.0) -> str:
        """Run a bash command in the task's container; returns its output and exit code.

        Args:
            command: the command line, run with bash -c in the task's working directory
            timeout_s: seconds before it is killed (at most 120)
        """
        timeout_s = min(max(float(timeout_s), 1.0), MAX_COMMAND_S)
        res = await self._call(
            run_in,
            self.runtime.client,
            self._name(),
            command,
            user=self.task.agent_user,
            timeout_s=timeout_s,
            max_bytes=MAX_OUTPUT_BYTES,
            workdir=self.task.workdir,
        )
        notes = [f"[exit code {res.exit_code}]"]
        if res.truncated:
            notes.append(f"[output cut at {MAX_OUTPUT_BYTES} bytes]")
        if res.timed_out:
            notes.append(f"[killed after {timeout_s:g} s]")
        return (
            res.output
            + ("\n" if res.output and not res.output.endswith("\n") else "")
            + " ".join(notes)
        )

    @tool
    async def read_file(self, path: str) -> str:
        """Read a text file in the task's container (the first 64 KiB).

        Args:
            path: the file's path (relative to the working directory or absolute)
        """
        res = await self._call(
            run_in,
            self.runtime.client,
            self._name(),
            f"head -c {MAX_FILE_BYTES} -- {shlex.quote(path)}",
            user=self.task.agent_user,
            timeout_s=10,
            max_bytes=MAX_FILE_BYTES,
            workdir=self.task.workdir,
        )
        if res.exit_code != 0:
            raise FileNotFoundError(res.output.strip() or f"cannot read {path}")
        return res.output

    @tool
    async def write_file(self, path: str, content: str) -> str:
        """Write a text file in the task's container (replacing it; parent folders are made).

        Args:
            path: the file's path (relative to the working directory or absolute)
            content: the whole new content (at most 64 KiB)
        """
        blob = content.encode()
        if len(blob) > MAX_FILE_BYTES:
            raise ValueError(f"content: {len(blob)} bytes, more than {MAX_FILE_BYTES}")
        b64 = base64.b64encode(blob).decode()
        q = shlex.quote(path)
        res = await self._call(
            run_in,
            self.runtime.client,
            self._name(),
            f'mkdir -p "$(dirname -- {q})" && printf %s {b64} | base64 -d > {q}',
            user=self.task.agent_user,
            timeout_s=10,
            max_bytes=4096,
            workdir=self.task.workdir,
        )
        if res.exit_code != 0:
            raise PermissionError(res.output.strip() or f"cannot write {path}")
        return f"wrote {len(blob)} bytes to {path}"

    @tool
    async def submit(self) -> str:
        """Finish: the task's tests grade the container as it is now, and the episode ends."""
        await self._grade()
        assert self.verdict is not None
        return f"graded: reward {self.verdict.reward:g}"
