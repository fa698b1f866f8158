"""``CLIHarnessAdapter``: an external program drives a session (black-box, for evaluation).

The program talks JSON lines on its stdin/stdout, one request per line, one reply per request::

    -> {"id": 1, "method": "initial_messages"}          <- {"id": 1, "result": [{"role": ..., "content": ...}]}
    -> {"id": 2, "method": "tools/list"}                <- {"id": 2, "result": [{"name", "description", "input_schema"}]}
    -> {"id": 3, "method": "tools/call", "params": {"name": "echo_message", "arguments": {...}}}
                                                        <- {"id": 3, "result": {"data", "done", "reward", "error"}}

A bad request gets ``{"id", "error": {"message"}}`` and the run goes on. The episode ends when the
program exits; a non-zero exit or running past ``episode_timeout_s`` is a ``HarnessProcessError``
(an infrastructure error: retried or dropped, never scored).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from typing import Any

from ..rollout.episode import RolloutConfig
from .adapters import HarnessAdapter, HarnessRolloutResult, ToolTraceEntry
from .errors import HarnessProcessError as HarnessProcessError
from .session import ResourceSession, to_text


class CLIHarnessAdapter(HarnessAdapter):
    """Runs ``command`` once per episode; ``env`` is added to the program's environment."""

    def __init__(
        self, command: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | None = None
    ) -> None:
        if not command or not all(isinstance(c, str) for c in command):
            raise ValueError(f"command must be a non-empty list of strings (argv), got {command!r}")
        self.command = list(command)
        self.env = dict(env or {})
        self.cwd = cwd

    async def run_black_box(
        self, session: ResourceSession, config: RolloutConfig
    ) -> HarnessRolloutResult:
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, **self.env},
                cwd=self.cwd,
            )
        except OSError as exc:
            raise HarnessProcessError(f"could not start harness {self.command!r}: {exc}") from exc
        out = HarnessRolloutResult()
        stderr_task = asyncio.ensure_future(proc.stderr.read())  # type: ignore[union-attr]
        try:
            await asyncio.wait_for(self._serve(proc, session, out), config.episode_timeout_s)
            code = await asyncio.wait_for(proc.wait(), config.episode_timeout_s)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            raise HarnessProcessError(
                f"harness {self.command!r} ran past episode_timeout_s={config.episode_timeout_s} and was killed"
            ) from None
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            stderr = (await stderr_task).decode(errors="replace")
        if code != 0:
            raise HarnessProcessError(
                f"harness {self.command!r} exited with code {code}; stderr tail: {stderr[-500:]!r}"
            )
        out.done = True
        out.metrics.update(tool_calls=len(out.tool_trace), exit_code=code)
        return out

    async def _serve(
        self, proc: asyncio.subprocess.Process, session: ResourceSession, out: HarnessRolloutResult
    ) -> None:
        assert proc.stdout is not None and proc.stdin is not None
        while True:
            line = await proc.stdout.readline()
            if not line:
                return
            if not line.strip():
                continue
            reply = await self._handle(line, session, out)
            try:
                proc.stdin.write((json.dumps(reply, default=str) + "\n").encode())
                await proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                return

    async def _handle(
        self, line: bytes, session: ResourceSession, out: HarnessRolloutResult
    ) -> dict[str, Any]:
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("a request must be a JSON object")
        except ValueError as exc:
            return {
                "id": None,
                "error": {"message": f"bad request line ({exc}); send one JSON object per line"},
            }
        rid, method, params = req.get("id"), req.get("method"), req.get("params") or {}
        if method == "initial_messages":
            messages = await session.initial_messages()
            if not out.messages:
                out.messages.extend(messages)
            return {"id": rid, "result": messages}
        if method == "tools/list":
            return {"id": rid, "result": [t.model_dump() for t in await session.list_tools()]}
        if method == "tools/call":
            name, args = params.get("name"), params.get("arguments", {})
            if not isinstance(name, str) or not isinstance(args, dict):
                return {
                    "id": rid,
                    "error": {
                        "message": 'tools/call needs params {"name": str, "arguments": object}'
                    },
                }
            result = await session.call_tool(name, args)
            out.tool_trace.append(ToolTraceEntry(name, dict(args), result))
            out.messages.append(
                {
                    "role": "tool",
                    "name": name,
                    "content": f"error: {result.error}" if result.error else to_text(result.data),
                }
            )
            return {
                "id": rid,
                "result": {
                    "data": result.data,
                    "done": result.done,
                    "reward": result.reward,
                    "error": result.error,
                },
            }
        return {
            "id": rid,
            "error": {
                "message": f"unknown method {method!r}; use initial_messages, tools/list or tools/call"
            },
        }
