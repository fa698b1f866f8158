"""A small ReAct agent program: the reference harness that runs inside an env (RFC 005).

It is an ordinary agent, with no training code in it: the ``openai`` client library for its
model (``OPENAI_BASE_URL``, e.g. a capture proxy episode) and the official ``mcp`` SDK client for
the env's tools (``OPENENV_MCP_URL``). It speaks the JSON-lines protocol of
``ProcessHarnessAdapter`` on stdin/stdout. Run: ``python -m openenv_train.agents.react_agent``.
Settings (environment): ``REACT_MAX_STEPS`` (model calls per turn, default 6),
``REACT_MAX_TOKENS`` (per call, default 128), ``REACT_SYSTEM`` (system prompt).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from ..core.tool_schema import tools_to_openai

#: what it imports before it is ready (``HarnessConfig.preload``: each start forks from a process
#: that imported them once, instead of importing them again)
PRELOAD = ("openai", "mcp", "mcp.client.streamable_http", "openenv_train.core.tool_schema")

SYSTEM = (
    "You are an agent with tools. Call a tool with "
    '<tool_call>{"name": ..., "arguments": {...}}</tool_call>; answer in plain text when done.'
)


def emit(kind: str, **data: Any) -> None:
    sys.stdout.write(json.dumps({"type": kind, "data": data}) + "\n")
    sys.stdout.flush()


async def run_turn(llm: Any, mcp: Any, messages: list[dict[str, Any]], tools: list[Any]) -> None:
    """One turn: model calls and tool calls until the model answers without a tool call."""
    import openai

    max_steps = int(os.environ.get("REACT_MAX_STEPS", "6"))
    max_tokens = int(os.environ.get("REACT_MAX_TOKENS", "128"))
    spec = tools_to_openai(tools) or None
    for _ in range(max_steps):
        try:
            reply = await llm.chat.completions.create(
                model="policy", messages=messages, tools=spec, max_tokens=max_tokens
            )
        except openai.APIError as exc:  # the model endpoint refused: report, keep the episode
            emit("error", message=f"model call failed: {exc}", recoverable=True)
            emit("turn_complete", response="", done=False)
            return
        msg = reply.choices[0].message
        emit("llm_response", content=msg.content, tool_calls=len(msg.tool_calls or []))
        messages.append(msg.model_dump(exclude_none=True))
        if not msg.tool_calls:
            emit("turn_complete", response=msg.content or "", done=True)
            return
        for call in msg.tool_calls:
            name = call.function.name
            try:
                args = json.loads(call.function.arguments or "{}")
            except ValueError:
                args = {}
            emit("tool_call", tool_name=name, arguments=args)
            text, error = await call_tool(mcp, name, args)
            emit("tool_result", tool_name=name, result=text, error=error)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
    emit("turn_complete", response="", done=False)  # out of steps; the env's verifier decides


async def call_tool(mcp: Any, name: str, args: dict[str, Any]) -> tuple[str, str | None]:
    try:  # the MCP SDK's error class: MCPError from mcp 2, McpError in mcp 1.x
        from mcp.shared.exceptions import MCPError
    except ImportError:
        from mcp.shared.exceptions import McpError as MCPError

    try:
        result = await mcp.call_tool(name, args)
    except MCPError as exc:  # unknown tool: tell the model, as an agent would
        return f"error: {exc}", str(exc)
    text = "".join(getattr(c, "text", "") for c in result.content)
    is_error = getattr(result, "is_error", getattr(result, "isError", False))  # mcp 2 / 1.x
    return text, text if is_error else None


async def main() -> None:
    import openai
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    llm = openai.AsyncOpenAI(
        base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "none")
    )
    system = os.environ.get("REACT_SYSTEM", SYSTEM)
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    # mcp 1.x yields (read, write, get_session_id), mcp 2 (read, write)
    async with streamable_http_client(os.environ["OPENENV_MCP_URL"]) as streams:
        async with ClientSession(streams[0], streams[1]) as mcp:
            await serve(llm, mcp, messages)
    await llm.close()


async def serve(llm: Any, mcp: Any, messages: list[dict[str, Any]]) -> None:
    """Answer each ``message`` frame of stdin with one turn, until stdin closes."""
    await mcp.initialize()
    tools = (await mcp.list_tools()).tools
    emit("ready", tools=[t.name for t in tools])
    while line := await asyncio.to_thread(sys.stdin.readline):
        frame = json.loads(line)
        if frame.get("type") != "message":
            continue
        messages.append({"role": "user", "content": str(frame.get("content", ""))})
        await run_turn(llm, mcp, messages, tools)


if __name__ == "__main__":
    asyncio.run(main())
