"""``ResourceSession``: one rollout's env/resources as a harness sees them (messages, tools, verify).

Async, because every session of a batch runs on one event loop at the same time. Two adapters
cover the common cases: ``StepEnvSessionAdapter`` (any reset/step client, tools mapped onto
actions) and ``MCPEnvSession`` (an env that serves MCP tools over ``/ws``, like ``echo_env``).
Tool errors caused by the agent (unknown tool, bad arguments) come back as ``ToolResult.error``;
infrastructure errors propagate as ``InfrastructureError`` so the rollout retries or drops them.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..client.mcp_client import unwrap_tool_result
from ..core.errors import EnvServerError, InfrastructureError
from ..core.mcp_types import (
    RESERVED_TOOL_NAMES,
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    Tool,
)
from ..core.models import Action, StepResult

Message = dict[str, Any]


@dataclass
class ToolResult:
    """A tool call's outcome: ``data`` for the model, ``error`` if the call failed (agent's fault)."""

    data: Any = None
    done: bool = False
    reward: float | None = None
    error: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class VerifyResult:
    """Final verdict: ``env_reward`` is forwarded from the env, never synthesised (None = unscored)."""

    env_reward: float | None = None
    done: bool = False
    metrics: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, Any] = field(default_factory=dict)


def to_text(value: Any) -> str:
    """Tool data as message text: strings as they are, anything else as stable JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    return json.dumps(value, sort_keys=True, default=str)


class ResourceSession(ABC):
    """Per-rollout session exposed to a harness."""

    @abstractmethod
    async def initial_messages(self) -> list[Message]:
        """The conversation the model starts from."""

    @abstractmethod
    async def list_tools(self) -> list[Tool]:
        """The tools the model may call."""

    @abstractmethod
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool call. Agent mistakes -> ``ToolResult.error``; infra failures raise."""

    @abstractmethod
    async def verify(
        self, transcript: list[Message], final_state: dict[str, Any] | None = None
    ) -> VerifyResult:
        """The env's reward and metrics once the harness stopped."""

    @abstractmethod
    async def close(self) -> None:
        """Release the session (idempotent)."""


def _check_tool_name(name: str, known: set[str]) -> str | None:
    if name in RESERVED_TOOL_NAMES:
        return f"{name!r} is a reserved name, not a tool; available tools: {sorted(known)}"
    if known and name not in known:
        return f"unknown tool {name!r}; available tools: {sorted(known)}"
    return None


class _ClientSession(ResourceSession):
    """What every client-backed session shares: ``open`` (connect + reset) and the first prompt."""

    def __init__(
        self,
        client: Any,
        initial_messages_builder: Callable[[StepResult[Any], Any], list[Message]],
        task: Any,
    ) -> None:
        self.client = client
        self.task = task
        self._initial_builder = initial_messages_builder
        self._reset_result: StepResult[Any] | None = None
        self._closed = False

    @classmethod
    async def open(cls, client: Any, *, reset_kwargs: dict[str, Any] | None = None, **kwargs: Any):
        """Connect and reset; a failure closes the session before it propagates."""
        session = cls(client, **kwargs)
        try:
            await client.connect()
            session._on_reset(await client.reset(**(reset_kwargs or {})))
        except BaseException:
            await session.close()
            raise
        return session

    def _on_reset(self, result: StepResult[Any]) -> None:
        self._reset_result = result

    async def initial_messages(self) -> list[Message]:
        if self._reset_result is None:
            raise RuntimeError(
                f"session not started; create it with `await {type(self).__name__}.open(...)`"
            )
        return list(self._initial_builder(self._reset_result, self.task))


class StepEnvSessionAdapter(_ClientSession):
    """A reset/step env client as a session: ``action_builder(tool_name, args)`` makes the action.

    Create with ``await StepEnvSessionAdapter.open(client, ...)`` (connects and resets). The reward
    is the last step's reward; ``initial_messages_builder(reset_result, task)`` writes the prompt;
    ``observation_text(result)`` renders a step result for the model (JSON of the observation by
    default).
    """

    def __init__(
        self,
        client: Any,
        *,
        tools: list[Tool],
        action_builder: Callable[[str, dict[str, Any]], Action],
        initial_messages_builder: Callable[[StepResult[Any], Any], list[Message]],
        observation_text: Callable[[StepResult[Any]], str] | None = None,
        task: Any = None,
    ) -> None:
        super().__init__(client, initial_messages_builder, task)
        self.tools = list(tools)
        bad = sorted({t.name for t in self.tools} & RESERVED_TOOL_NAMES)
        if bad:
            raise ValueError(
                f"tools: {bad} are reserved names (reset/step/state/close); rename them"
            )
        self._names = {t.name for t in self.tools}
        self._action_builder = action_builder
        self._observation_text = observation_text or (lambda r: to_text(r.observation))
        self.last_result: StepResult[Any] | None = None

    def _on_reset(self, result: StepResult[Any]) -> None:
        self._reset_result = self.last_result = result

    async def list_tools(self) -> list[Tool]:
        return list(self.tools)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        problem = _check_tool_name(name, self._names)
        if problem:
            return ToolResult(error=problem)
        try:
            action = self._action_builder(name, dict(arguments))
        except (ValueError, TypeError) as exc:
            return ToolResult(error=f"bad arguments for {name!r}: {exc}")
        try:
            result = await self.client.step(action)
        except InfrastructureError:
            raise
        except EnvServerError as exc:  # validation/execution error: the agent's action was bad
            return ToolResult(error=str(exc))
        self.last_result = result
        return ToolResult(
            data=self._observation_text(result),
            done=bool(result.done),
            reward=None if result.reward is None else float(result.reward),
        )

    async def verify(
        self, transcript: list[Message], final_state: dict[str, Any] | None = None
    ) -> VerifyResult:
        last = self.last_result
        reward = None if last is None or last.reward is None else float(last.reward)
        return VerifyResult(env_reward=reward, done=bool(last and last.done))

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self.client.close()


class MCPEnvSession(_ClientSession):
    """An env with MCP tools over ``/ws`` (``MCPToolClient``, e.g. ``echo_env.EchoEnv``) as a session.

    Tool calls are ``CallToolAction`` steps, so each call's reward/done is seen. ``verifier`` (async
    or sync ``(transcript, session) -> VerifyResult``) scores the episode; by default the last
    reward the env sent is forwarded (None if it sent none).
    """

    def __init__(
        self,
        client: Any,
        *,
        initial_messages_builder: Callable[[StepResult[Any], Any], list[Message]],
        verifier: Callable[[list[Message], MCPEnvSession], Any] | None = None,
        task: Any = None,
    ) -> None:
        super().__init__(client, initial_messages_builder, task)
        self._verifier = verifier
        self._tools: list[Tool] | None = None
        self.last_reward: float | None = None
        self.done = False
        self.calls: list[tuple[str, dict[str, Any], ToolResult]] = []

    async def list_tools(self) -> list[Tool]:
        if self._tools is None:
            obs = (await self.client.step(ListToolsAction())).observation
            tools = getattr(obs, "tools", None)
            if tools is None:
                raise InfrastructureError(
                    f"list_tools: the env answered {type(obs).__name__}, not a tool list"
                )
            self._tools = [t if isinstance(t, Tool) else Tool.model_validate(t) for t in tools]
        return list(self._tools)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        problem = _check_tool_name(name, {t.name for t in await self.list_tools()})
        if problem:
            result = ToolResult(error=problem)
        else:
            try:
                step = await self.client.step(
                    CallToolAction(tool_name=name, arguments=dict(arguments))
                )
            except InfrastructureError:
                raise
            except EnvServerError as exc:
                step = None
                result = ToolResult(error=str(exc))
            if step is not None:
                obs = step.observation
                reward = None if step.reward is None else float(step.reward)
                if reward is not None:
                    self.last_reward = reward
                self.done = self.done or bool(step.done)
                error = (
                    obs.error.message
                    if isinstance(obs, CallToolObservation) and obs.error
                    else None
                )
                raw = getattr(obs, "result", None)
                data = unwrap_tool_result(raw)
                if isinstance(raw, dict) and raw.get("is_error"):  # the tool raised
                    error, data = to_text(unwrap_tool_result({**raw, "data": None})), None
                result = ToolResult(data=data, done=bool(step.done), reward=reward, error=error)
        self.calls.append((name, dict(arguments), result))
        return result

    async def verify(
        self, transcript: list[Message], final_state: dict[str, Any] | None = None
    ) -> VerifyResult:
        if self._verifier is None:
            return VerifyResult(
                env_reward=self.last_reward, done=self.done, metrics={"tool_calls": len(self.calls)}
            )
        out = self._verifier(transcript, self)
        if hasattr(out, "__await__"):
            out = await out
        if not isinstance(out, VerifyResult):
            raise TypeError(f"verifier must return a VerifyResult, got {type(out).__name__}")
        return out

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self.client.close()
