"""RFC 005 harness adapters: an agent program that owns its loop, driven one turn at a time.

``AgenticHarnessAdapter`` is the interface (start, idempotent stop, inject tools, send a message
and stream its events, is_alive). ``ProcessHarnessAdapter`` runs any program that speaks JSON
lines on stdin/stdout::

    program -> {"type": "ready"}                                   once, after startup
    us      -> {"type": "message", "content": "..."}               one turn
    program -> {"type": "tool_call" | "llm_response" | ..., "data": {...}}   zero or more events
    program -> {"type": "turn_complete", "data": {"response": "...", "done": false}}

Failures are typed infrastructure errors (never a reward): the program does not start or get
ready (``HarnessStartupError``), a turn is sent with no program running (``HarnessNotRunningError``),
a turn runs past its budget (``HarnessTurnTimeoutError``), the program dies mid-turn or breaks
the protocol (``HarnessCrashedError``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from pydantic import BaseModel, Field

from ..core.mcp_types import Tool
from .errors import HarnessCrashedError as HarnessCrashedError
from .errors import HarnessError as HarnessError
from .errors import HarnessNotRunningError as HarnessNotRunningError
from .errors import HarnessStartupError as HarnessStartupError
from .errors import HarnessTurnTimeoutError as HarnessTurnTimeoutError
from .forked_program import ForkedProgram, start_forked


class HarnessEventType(str, Enum):
    LLM_REQUEST = "llm_request"
    LLM_RESPONSE = "llm_response"
    LLM_CHUNK = "llm_chunk"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    TEXT_OUTPUT = "text_output"
    ERROR = "error"
    TURN_COMPLETE = "turn_complete"


class HarnessEvent(BaseModel):
    """One event of a turn (same field names as OpenEnv 0.10's ``HarnessEvent``)."""

    type: HarnessEventType
    timestamp: float = Field(default_factory=time.time)
    data: dict[str, Any] = Field(default_factory=dict)


class HarnessResponse(BaseModel):
    response: str
    events: list[HarnessEvent] = Field(default_factory=list)
    done: bool = False


@dataclass
class HarnessConfig:
    """How to run a harness program. ``env_vars`` are added to the program's environment.

    ``preload``: for a ``python_command`` program, the modules it imports before it is ready;
    each start then forks from a process that imported them once (``forked_program``), instead
    of a fresh interpreter importing them every episode. Empty: a fresh interpreter each time.
    """

    name: str
    command: list[str]
    working_directory: str = "."
    env_vars: dict[str, str] = field(default_factory=dict)
    startup_timeout_s: float = 30.0
    turn_timeout_s: float = 300.0
    stop_grace_s: float = 3.0
    preload: tuple[str, ...] = ()


class AgenticHarnessAdapter(ABC):
    """One harness program's lifecycle; one adapter per env instance (never shared)."""

    #: Names of the harness's own tools; env tools with these names are renamed on injection.
    BUILTIN_TOOL_NAMES: frozenset[str] = frozenset()

    def __init__(self, config: HarnessConfig) -> None:
        self.config = config

    @abstractmethod
    async def start(self, working_directory: str | None = None) -> None:
        """Start the program; raise ``HarnessStartupError`` if it does not get ready."""

    @abstractmethod
    async def stop(self) -> None:
        """Stop the program and free its resources; safe to call any number of times."""

    @abstractmethod
    async def inject_tools(self, tools: list[Tool], mcp_url: str | None) -> None:
        """Tell the harness (before ``start``) which env tools exist and where to call them."""

    @abstractmethod
    def send_message_streaming(self, message: str) -> AsyncIterator[HarnessEvent]:
        """Run one turn; yield its events, the last one ``TURN_COMPLETE``."""

    @abstractmethod
    async def is_alive(self) -> bool: ...

    async def send_message(self, message: str, timeout_s: float | None = None) -> HarnessResponse:
        """One whole turn within ``timeout_s`` (default: the config's ``turn_timeout_s``)."""
        budget = self.config.turn_timeout_s if timeout_s is None else timeout_s
        events: list[HarnessEvent] = []

        async def drain() -> None:
            async for event in self.send_message_streaming(message):
                events.append(event)

        try:
            await asyncio.wait_for(drain(), budget)
        except asyncio.TimeoutError:
            raise HarnessTurnTimeoutError(
                f"harness {self.config.name!r}: the turn ran past {budget}s (turn_timeout_s)"
            ) from None
        if not events or events[-1].type is not HarnessEventType.TURN_COMPLETE:
            raise HarnessCrashedError(
                f"harness {self.config.name!r}: the turn ended without a turn_complete event"
            )
        last = events[-1].data
        return HarnessResponse(
            response=str(last.get("response", "")), events=events, done=bool(last.get("done"))
        )


class ProcessHarnessAdapter(AgenticHarnessAdapter):
    """Runs ``config.command`` as a child process in its own process group (JSON lines on stdio).

    Injected tools reach the program as environment variables: ``OPENENV_MCP_URL`` (a streamable
    HTTP MCP endpoint serving the env's tools) and ``OPENENV_TOOLS`` (a JSON list of the names).
    """

    def __init__(self, config: HarnessConfig) -> None:
        super().__init__(config)
        self._proc: asyncio.subprocess.Process | ForkedProgram | None = None
        self._stderr: deque[str] = deque(maxlen=40)
        self._stderr_task: asyncio.Task[None] | None = None
        self._tool_env: dict[str, str] = {}

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    async def inject_tools(self, tools: list[Tool], mcp_url: str | None) -> None:
        self._tool_env = {"OPENENV_TOOLS": json.dumps([t.name for t in tools])}
        if mcp_url:
            self._tool_env["OPENENV_MCP_URL"] = mcp_url

    async def start(self, working_directory: str | None = None) -> None:
        await self.stop()
        cfg = self.config
        env = {**os.environ, **cfg.env_vars, **self._tool_env, "PYTHONUNBUFFERED": "1"}
        cwd = os.path.abspath(working_directory or cfg.working_directory)
        limit = 16 * 1024 * 1024  # one event line
        try:
            forked = await start_forked(cfg.command, cfg.preload, env, cwd, limit)
            self._proc = forked or await asyncio.create_subprocess_exec(
                *cfg.command,
                cwd=cwd,
                env=env,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                limit=limit,
            )
        except OSError as exc:
            raise HarnessStartupError(
                f"harness {cfg.name!r}: cannot run {cfg.command}: {exc}"
            ) from exc
        self._stderr.clear()
        self._stderr_task = asyncio.get_running_loop().create_task(self._read_stderr(self._proc))
        try:
            line = await asyncio.wait_for(self._read_event_line(), cfg.startup_timeout_s)
        except asyncio.TimeoutError:
            await self.stop()
            raise HarnessStartupError(
                f"harness {cfg.name!r} did not report ready within {cfg.startup_timeout_s}s "
                f"(startup_timeout_s); stderr: {self.stderr_tail()!r}"
            ) from None
        except HarnessCrashedError as exc:
            await self.stop()
            raise HarnessStartupError(f"harness {cfg.name!r} exited during startup: {exc}") from exc
        if line.get("type") != "ready":
            await self.stop()
            raise HarnessStartupError(
                f'harness {cfg.name!r}: first line must be {{"type": "ready"}}, got {line!r}'
            )

    async def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), self.config.stop_grace_s)
            except asyncio.TimeoutError:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
        elif proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # children the program left behind
        task, self._stderr_task = self._stderr_task, None
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 1.0)

    async def is_alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    def stderr_tail(self) -> str:
        return "".join(self._stderr)[-2000:]

    async def send_message_streaming(self, message: str) -> AsyncIterator[HarnessEvent]:
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise HarnessNotRunningError(
                f"harness {self.config.name!r} is not running; reset() starts it"
            )
        if proc.returncode is not None:
            raise HarnessCrashedError(
                f"harness {self.config.name!r} exited with code {proc.returncode} between turns; "
                f"stderr: {self.stderr_tail()!r}"
            )
        try:
            proc.stdin.write((json.dumps({"type": "message", "content": message}) + "\n").encode())
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise HarnessCrashedError(
                f"harness {self.config.name!r} closed its stdin: {exc}"
            ) from exc
        while True:
            line = await self._read_event_line()
            try:
                event = HarnessEvent(type=line.get("type"), data=line.get("data") or {})
            except ValueError as exc:
                raise HarnessCrashedError(
                    f"harness {self.config.name!r} sent an unknown event {line!r}: {exc}"
                ) from exc
            yield event
            if event.type is HarnessEventType.TURN_COMPLETE:
                return

    async def _read_event_line(self) -> dict[str, Any]:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        raw = await proc.stdout.readline()
        if not raw:
            code = await proc.wait()
            raise HarnessCrashedError(
                f"harness {self.config.name!r} exited with code {code}; "
                f"stderr: {self.stderr_tail()!r}"
            )
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise HarnessCrashedError(
                f"harness {self.config.name!r} printed a line that is not a JSON event: {raw[:200]!r}"
            )
        return data

    async def _read_stderr(self, proc: asyncio.subprocess.Process | ForkedProgram) -> None:
        assert proc.stderr is not None
        while line := await proc.stderr.readline():
            self._stderr.append(line.decode(errors="replace"))


def python_command(module: str, *args: str) -> list[str]:
    """A harness command that runs ``python -m module`` with this interpreter."""
    return [sys.executable, "-m", module, *args]
