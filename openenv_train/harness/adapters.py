"""Harness adapters: who drives a ``ResourceSession`` through an episode.

- ``MCPHarnessAdapter`` (white-box): the trainer owns sampling. The model's tool calls are parsed
  from its text, executed against the session's tools, and the results appended as ``tool``
  messages (env_mask 0). It stops when the model makes no tool call, a tool says ``done``, or a
  limit of the ``RolloutConfig`` is hit. The turns run in the shared episode loop
  (``rollout.episode.play_episode``), so the record is exactly what the model saw.
- ``CLIHarnessAdapter`` (black-box): an external program drives the session over JSON lines on
  stdin/stdout (see ``cli.py``); no tokens, for evaluation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.tool_schema import tools_to_openai
from ..policy.interface import Generation, SamplingSettings
from ..rollout.episode import Reply, RolloutConfig, play_episode
from ..rollout.tokens import TokenCodec
from .session import Message, ResourceSession, ToolResult, to_text


@dataclass
class ToolTraceEntry:
    tool_name: str
    arguments: dict[str, Any]
    result: ToolResult


@dataclass
class HarnessRolloutResult:
    """What a harness run produced: the transcript, the tool trace and (white-box) the tokens."""

    messages: list[Message] = field(default_factory=list)
    tool_trace: list[ToolTraceEntry] = field(default_factory=list)
    done: bool = False
    num_turns: int = 0
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass
class ModelStep:
    """How a white-box harness samples: ``generate(context_ids, sampling)`` plus the tokenizer codec.

    ``HarnessRunner(policy=...)`` builds one whose calls go through the shared batcher.
    """

    generate: Callable[[list[int], SamplingSettings], Awaitable[Generation]]
    codec: TokenCodec


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]
    error: str | None = None  # set when the call could not be parsed (fed back to the model)


_TOOL_CALL_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)


def parse_tool_calls(text: str) -> list[ToolCall]:
    """Hermes/Qwen-style calls: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``.

    A malformed call becomes a ``ToolCall`` with ``error`` set (the model is told, the game goes on).
    """
    calls = []
    for body in _TOOL_CALL_RE.findall(text):
        try:
            data = json.loads(body.strip())
        except ValueError as exc:
            calls.append(
                ToolCall("", {}, f"tool call is not valid JSON ({exc.msg}): {body.strip()[:200]}")
            )
            continue
        name = data.get("name") if isinstance(data, dict) else None
        args = data.get("arguments", {}) if isinstance(data, dict) else None
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = None
        if not isinstance(name, str) or not name or not isinstance(args, dict):
            calls.append(
                ToolCall(
                    "",
                    {},
                    'a tool call needs {"name": <string>, "arguments": <object>}, got '
                    + body.strip()[:200],
                )
            )
            continue
        calls.append(ToolCall(name, args))
    return calls


class HarnessAdapter:
    """Drives a session through one episode."""

    async def run_white_box(
        self, model_step: ModelStep, session: ResourceSession, config: RolloutConfig
    ) -> HarnessRolloutResult:
        """Run an episode while the trainer owns sampling (tokens recorded)."""
        raise NotImplementedError(f"{type(self).__name__} is black-box only; use run_black_box")

    async def run_black_box(
        self, session: ResourceSession, config: RolloutConfig
    ) -> HarnessRolloutResult:
        """Run an episode with an opaque driver (evaluation: no tokens)."""
        raise NotImplementedError(f"{type(self).__name__} is white-box only; use run_white_box")


class MCPHarnessAdapter(HarnessAdapter):
    """White-box MCP tool-calling loop. ``tool_call_parser`` reads calls out of the model's text."""

    def __init__(
        self, tool_call_parser: Callable[[str], list[ToolCall]] = parse_tool_calls
    ) -> None:
        self.parse = tool_call_parser

    async def run_white_box(
        self, model_step: ModelStep, session: ResourceSession, config: RolloutConfig
    ) -> HarnessRolloutResult:
        messages = list(await session.initial_messages())
        tool_specs = tools_to_openai(await session.list_tools()) or None
        out = HarnessRolloutResult()
        total = {"calls": 0}

        async def respond(gen: Generation) -> Reply:
            messages.append({"role": "assistant", "content": gen.text})
            calls = self.parse(gen.text)
            if not calls:
                return Reply(stop="no_tool_call")
            if config.max_tool_calls_per_turn is not None:
                calls = calls[: config.max_tool_calls_per_turn]
            reply = Reply()
            for call in calls:
                if config.max_total_tool_calls is not None:
                    if total["calls"] >= config.max_total_tool_calls:
                        reply.stop = "limit"
                        break
                result = (
                    ToolResult(error=call.error)
                    if call.error
                    else await session.call_tool(call.name, call.arguments)
                )
                total["calls"] += 1
                out.tool_trace.append(ToolTraceEntry(call.name, dict(call.arguments), result))
                content = f"error: {result.error}" if result.error else to_text(result.data)
                reply.messages.append(
                    {"role": "tool", "name": call.name or "invalid", "content": content}
                )
                if result.done:
                    reply.stop = "done"
                    break
            messages.extend(reply.messages)
            return reply

        episode = await play_episode(
            messages,
            generate=model_step.generate,
            codec=model_step.codec,
            config=config,
            respond=respond,
            tools=tool_specs,
        )
        toks = episode.tokens
        out.messages = messages
        out.num_turns = episode.turns
        out.done = episode.stop in ("done", "no_tool_call")
        out.prompt_ids, out.completion_ids = toks.prompt_ids, toks.completion_ids
        out.logprobs, out.env_mask = toks.logprobs, toks.env_mask
        out.metrics.update(
            episode.metrics(),
            tool_calls=total["calls"],
            tool_errors=sum(1 for e in out.tool_trace if e.result.error),
        )
        return out
