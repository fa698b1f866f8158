"""Harness adapters: who drives a ``ResourceSession`` through an episode.

- ``MCPHarnessAdapter`` (white-box): the trainer owns sampling. The model's tool calls are parsed
  from its text, executed against the session's tools, and the results appended as ``tool``
  messages (env_mask 0). It stops when the model makes no tool call, a tool says ``done``, or a
  limit is hit. Tokens are built incrementally, so the record is exactly what the model saw.
- ``CLIHarnessAdapter`` (black-box): an external program drives the session over JSON lines on
  stdin/stdout (see ``cli.py``); no tokens, for evaluation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..policy.base import Generation, SamplingSettings
from ..rollout.tokens import EpisodeTokens, TokenCodec
from .session import Message, ResourceSession, ToolResult, to_text, tool_to_json


@dataclass
class HarnessRunLimits:
    """Limits of one harness-driven episode (and the sampling knobs of its model turns)."""

    max_turns: int = 10
    max_tool_calls_per_turn: int | None = None
    max_total_tool_calls: int | None = None
    max_new_tokens: int = 256  # per model turn
    max_episode_tokens: int = 4096  # completion tokens (model + tool) per episode
    episode_timeout_s: float = 300.0
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0

    def __post_init__(self) -> None:
        for name in ("max_turns", "max_new_tokens", "max_episode_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"HarnessRunLimits.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("max_tool_calls_per_turn", "max_total_tool_calls"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"HarnessRunLimits.{name} must be >= 0 or None, got {value}")
        if self.episode_timeout_s <= 0:
            raise ValueError(
                f"HarnessRunLimits.episode_timeout_s must be > 0, got {self.episode_timeout_s}"
            )


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

    ``build_harness_rollout_func(policy=...)`` builds one whose calls go through the shared batcher.
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
        self, model_step: ModelStep, session: ResourceSession, limits: HarnessRunLimits
    ) -> HarnessRolloutResult:
        """Run an episode while the trainer owns sampling (tokens recorded)."""
        raise NotImplementedError(f"{type(self).__name__} is black-box only; use run_black_box")

    async def run_black_box(
        self, session: ResourceSession, limits: HarnessRunLimits
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
        self, model_step: ModelStep, session: ResourceSession, limits: HarnessRunLimits
    ) -> HarnessRolloutResult:
        codec = model_step.codec
        messages = list(await session.initial_messages())
        tools = await session.list_tools()
        tool_specs = [tool_to_json(t) for t in tools] or None
        toks = EpisodeTokens(codec.prompt_ids(messages, tool_specs))
        out = HarnessRolloutResult()
        eos = getattr(codec.tokenizer, "eos_token_id", None)
        sampling = SamplingSettings(
            max_new_tokens=limits.max_new_tokens,
            temperature=limits.temperature,
            top_p=limits.top_p,
            top_k=limits.top_k,
            stop_token_ids=(eos,) if isinstance(eos, int) else (),
        )
        total_calls = 0
        stop = ""
        while True:
            budget = limits.max_episode_tokens - len(toks.completion_ids)
            if out.num_turns >= limits.max_turns or budget <= 0:
                stop = "limit"
                break
            turn_sampling = (
                sampling
                if budget >= sampling.max_new_tokens
                else replace(sampling, max_new_tokens=budget)
            )
            gen = await model_step.generate(toks.context(), turn_sampling)
            toks.add_model(list(gen.token_ids), list(gen.logprobs))
            out.num_turns += 1
            messages.append({"role": "assistant", "content": gen.text})
            calls = self.parse(gen.text)
            if not calls:
                stop = "no_tool_call"
                break
            if limits.max_tool_calls_per_turn is not None:
                calls = calls[: limits.max_tool_calls_per_turn]
            tool_messages: list[Message] = []
            for call in calls:
                if (
                    limits.max_total_tool_calls is not None
                    and total_calls >= limits.max_total_tool_calls
                ):
                    stop = "limit"
                    break
                result = (
                    ToolResult(error=call.error)
                    if call.error
                    else await session.call_tool(call.name, call.arguments)
                )
                total_calls += 1
                out.tool_trace.append(ToolTraceEntry(call.name, dict(call.arguments), result))
                content = f"error: {result.error}" if result.error else to_text(result.data)
                tool_messages.append(
                    {"role": "tool", "name": call.name or "invalid", "content": content}
                )
                if result.done:
                    stop = "done"
                    break
            messages.extend(tool_messages)
            if stop:
                break
            if out.num_turns >= limits.max_turns:
                stop = (
                    "limit"  # the model will not answer these results: keep them out of the tokens
                )
                break
            env_ids = codec.turn_ids(tool_messages)
            if len(toks.completion_ids) + len(env_ids) >= limits.max_episode_tokens:
                stop = "limit"
                break
            toks.add_env(env_ids)
        out.messages = messages
        out.done = stop in ("done", "no_tool_call")
        out.prompt_ids, out.completion_ids = toks.prompt_ids, toks.completion_ids
        out.logprobs, out.env_mask = toks.logprobs, toks.env_mask
        out.metrics.update(
            stop_reason=stop,
            turns=out.num_turns,
            tool_calls=total_calls,
            tool_errors=sum(1 for e in out.tool_trace if e.result.error),
            model_tokens=toks.model_tokens,
            env_tokens=toks.env_tokens,
        )
        return out
