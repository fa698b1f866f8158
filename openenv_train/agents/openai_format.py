"""The capture proxy's side of the OpenAI wire format: messages, responses, stream chunks.

Only what an agent harness needs: ``/v1/chat/completions`` (messages, function tools, streaming,
logprobs) and ``/v1/completions`` (a text prompt). The request model and the error shape are the
one shared with the policy endpoint (``rollout.openai_wire``).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from ..harness.adapters import parse_tool_calls
from ..rollout.openai_wire import ChatMessage, ChatRequest, CompletionRequest


def text_of(content: Any) -> str:
    """Message content (a string or OpenAI content parts) as text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))


def plain_message(msg: ChatMessage) -> dict[str, Any]:
    """A message as a chat template expects it (text content, tool-call arguments parsed)."""
    out: dict[str, Any] = {"role": msg.role, "content": text_of(msg.content)}
    if msg.name:
        out["name"] = msg.name
    if msg.tool_call_id:
        out["tool_call_id"] = msg.tool_call_id
    return out


def message_key(msg: ChatMessage | dict[str, Any]) -> tuple[Any, ...]:
    """What must not change when a harness sends a message back (ids and extra keys may)."""
    data = msg if isinstance(msg, dict) else msg.model_dump()
    calls = []
    for call in data.get("tool_calls") or []:
        fn = call.get("function") or {}
        args = fn.get("arguments")
        try:
            args = json.loads(args) if isinstance(args, str) else args
        except ValueError:
            pass
        calls.append((fn.get("name"), json.dumps(args, sort_keys=True)))
    return (data.get("role"), text_of(data.get("content")).strip(), tuple(calls))


def assistant_message(text: str, call_prefix: str) -> tuple[dict[str, Any], bool]:
    """Split generated text into OpenAI ``content`` and ``tool_calls`` (Hermes ``<tool_call>``)."""
    parsed = [c for c in parse_tool_calls(text) if c.error is None] if "<tool_call>" in text else []
    if not parsed:
        return {"role": "assistant", "content": text}, False
    content = text.split("<tool_call>", 1)[0].strip()
    calls = [
        {
            "id": f"{call_prefix}_{i}",
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
        }
        for i, c in enumerate(parsed)
    ]
    return {"role": "assistant", "content": content or None, "tool_calls": calls}, True


def _token_logprobs(tokenizer: Any, ids: list[int], logprobs: list[float]) -> dict[str, Any]:
    content = []
    for tid, lp in zip(ids, logprobs, strict=True):
        token = tokenizer.decode([tid])
        content.append(
            {"token": token, "logprob": lp, "bytes": list(token.encode()), "top_logprobs": []}
        )
    return {"content": content}


def chat_response(
    req: ChatRequest,
    message: dict[str, Any],
    finish: str,
    prompt_len: int,
    ids: list[int],
    logprobs: list[float],
    tokenizer: Any,
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": req.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": _token_logprobs(tokenizer, ids, logprobs) if req.logprobs else None,
                "finish_reason": finish,
            }
        ],
        "usage": _usage(prompt_len, len(ids)),
    }


def completion_response(
    req: CompletionRequest,
    text: str,
    finish: str,
    prompt_len: int,
    ids: list[int],
    logprobs: list[float],
    tokenizer: Any,
) -> dict[str, Any]:
    lp = None
    if req.logprobs is not None:
        tokens = [tokenizer.decode([t]) for t in ids]
        lp = {
            "tokens": tokens,
            "token_logprobs": logprobs,
            "top_logprobs": None,
            "text_offset": None,
        }
    return {
        "id": "cmpl-" + uuid.uuid4().hex[:24],
        "object": "text_completion",
        "created": int(time.time()),
        "model": req.model,
        "choices": [{"index": 0, "text": text, "logprobs": lp, "finish_reason": finish}],
        "usage": _usage(prompt_len, len(ids)),
    }


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def stream_chunks(response: dict[str, Any], include_usage: bool) -> list[str]:
    """A finished response replayed as server-sent events (the proxy generates in one piece)."""
    base = {k: response[k] for k in ("id", "created", "model")}
    choice = response["choices"][0]
    finish = choice["finish_reason"]
    chunks: list[dict[str, Any]] = []
    if response["object"] == "text_completion":
        base["object"] = "text_completion"
        chunks.append(
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "text": choice["text"],
                        "logprobs": choice["logprobs"],
                        "finish_reason": None,
                    }
                ],
            }
        )
        chunks.append(
            {
                **base,
                "choices": [{"index": 0, "text": "", "logprobs": None, "finish_reason": finish}],
            }
        )
    else:
        base["object"] = "chat.completion.chunk"
        msg = choice["message"]
        first = {"role": "assistant", "content": msg.get("content") or ""}
        chunks.append(
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": first,
                        "logprobs": choice["logprobs"],
                        "finish_reason": None,
                    }
                ],
            }
        )
        for i, call in enumerate(msg.get("tool_calls") or []):
            delta = {"tool_calls": [{"index": i, **call}]}
            chunks.append(
                {
                    **base,
                    "choices": [
                        {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
                    ],
                }
            )
        chunks.append(
            {
                **base,
                "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}],
            }
        )
    if include_usage:
        chunks.append({**base, "choices": [], "usage": response["usage"]})
    return [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
