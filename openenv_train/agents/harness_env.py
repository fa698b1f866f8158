"""RFC 005 ``HarnessEnvironment``: an agent program lives inside the env; each step is one turn.

``reset()`` stops any previous harness, injects the env's own ``@tool`` methods into a fresh
harness process (served by a per-episode :class:`ToolBridge`; names that clash with the
harness's built-in tools get a prefix), and starts it. ``step(HarnessAction(message=...))``
sends one message; the harness runs its own loop (LLM calls, tool calls) and answers; the
env's verifier (``score_turn``, or a ``rubric`` callable) turns the turn into a reward.

A harness that cannot start, has died, or runs past the turn budget raises a typed
``HarnessError`` (the server answers with an error frame): it is an infrastructure failure,
never a reward of 0. ``reset(llm_base_url=...)`` points the harness's OpenAI client at a
capture proxy episode (``OPENAI_BASE_URL``), which is how its LLM calls become training data.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable
from typing import Any

from pydantic import Field

from ..core.mcp_types import RESERVED_TOOL_NAMES, Tool
from ..core.models import Action, Observation, State
from ..core.rubrics import Rubric as BaseRubric
from ..server.mcp_environment import MCPEnvironment
from .agentic import (
    AgenticHarnessAdapter,
    HarnessCrashedError,
    HarnessError,
    HarnessNotRunningError,
    HarnessResponse,
)
from .tool_bridge import ToolBridge


class HarnessAction(Action):
    """One user message for one conversational turn."""

    message: str = Field(min_length=1, description="The user message for this turn")


class HarnessObservation(Observation):
    response: str = ""
    turn_number: int = 0
    turn_events: list[dict[str, Any]] = Field(default_factory=list)
    injected_tools: list[str] = Field(default_factory=list)


def resolve_tool_conflicts(
    tools: list[Tool], builtin: frozenset[str] | set[str], prefix: str = "env_"
) -> tuple[list[Tool], dict[str, str]]:
    """Rename env tools that clash with harness built-ins; returns (tools, served -> env name)."""
    names = {t.name for t in tools}
    reserved = sorted(names & RESERVED_TOOL_NAMES)
    if reserved:
        raise ValueError(f"env tool names {reserved} are reserved; rename those tools")
    out: list[Tool] = []
    renames: dict[str, str] = {}
    for tool in tools:
        name = tool.name
        if name in builtin:
            name = prefix + name
            if name in builtin or name in names:
                raise ValueError(
                    f"env tool {tool.name!r} clashes with a harness built-in and {name!r} is "
                    "taken too; rename the env tool or pass another prefix"
                )
            renames[name] = tool.name
        out.append(tool.model_copy(update={"name": name}))
    return out, renames


#: A turn verifier: a ``openenv_train.core.rubrics.Rubric`` scores ``(action, response)``; a plain
#: callable gets ``(action, response, env)``.
Rubric = Callable[[HarnessAction, HarnessResponse, Any], Any] | BaseRubric


class HarnessEnvironment(MCPEnvironment):
    """Subclass with ``@tool`` methods (the env's tools) and ``score_turn`` (the verifier).

    ``adapter`` is this instance's own harness (one process per env instance, never shared).
    """

    def __init__(
        self,
        adapter: AgenticHarnessAdapter,
        *,
        rubric: Rubric | None = None,
        tool_prefix: str = "env_",
    ) -> None:
        self.adapter = adapter
        self.rubric = rubric
        self.tool_prefix = tool_prefix
        self.bridge: ToolBridge | None = None
        self.active = False
        self.last_response: HarnessResponse | None = None
        self._state = State(episode_id=None, step_count=0)

    def on_reset(self, seed: int | None, **kwargs: Any) -> str | None:
        """Hook: set up the task for a new episode; may return text for the observation."""
        return None

    async def score_turn(self, action: HarnessAction, response: HarnessResponse) -> float | None:
        """The verifier: reward for one turn (default: the ``rubric``, else None)."""
        if self.rubric is None:
            return None
        if isinstance(self.rubric, BaseRubric):
            out = self.rubric(action, response)
        else:
            out = self.rubric(action, response, self)
        return await out if inspect.isawaitable(out) else out

    async def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        llm_base_url: str | None = None,
        **kwargs: Any,
    ) -> HarnessObservation:
        await self._teardown()
        task = self.on_reset(seed, **kwargs)
        tools, renames = resolve_tool_conflicts(
            await self.list_tools_async(), self.adapter.BUILTIN_TOOL_NAMES, self.tool_prefix
        )
        if llm_base_url:
            self.adapter.config.env_vars["OPENAI_BASE_URL"] = llm_base_url
        try:
            url = None
            if tools:
                self.bridge = ToolBridge(self, renames)
                url = await self.bridge.start()
            await self.adapter.inject_tools(tools, url)
            await self.adapter.start()
        except BaseException:
            await self._teardown()
            raise
        self.active = True
        self._state = State(episode_id=episode_id or uuid.uuid4().hex, step_count=0)
        return HarnessObservation(
            response=task or "", injected_tools=[t.name for t in tools], reward=None
        )

    async def step(self, action: Action, **kwargs: Any) -> Observation:  # type: ignore[override]
        if not isinstance(action, HarnessAction):
            return await super().step_async(action, **kwargs)
        if not self.active:
            raise HarnessNotRunningError("no harness is running; call reset() before step()")
        try:
            if not await self.adapter.is_alive():
                raise HarnessCrashedError(
                    f"harness {self.adapter.config.name!r} died between turns"
                )
            response = await self.adapter.send_message(action.message, kwargs.get("timeout_s"))
        except HarnessError:
            await self._teardown()  # a broken turn cannot resume: free the process now
            raise
        self._state.step_count += 1
        self.last_response = response
        obs = HarnessObservation(
            response=response.response,
            turn_number=self._state.step_count,
            turn_events=[e.model_dump(mode="json") for e in response.events],
            done=response.done,
        )
        obs.reward = await self.score_turn(action, response)
        return obs

    def state(self) -> State:
        return self._state

    async def close(self) -> None:
        await self._teardown()

    async def _teardown(self) -> None:
        self.active = False
        try:
            await self.adapter.stop()
        finally:
            bridge, self.bridge = self.bridge, None
            if bridge is not None:
                await bridge.stop()
