"""The OpenAI wire format the capture proxy speaks: request checks, responses, stream chunks.

Only what an agent harness needs: ``/v1/chat/completions`` (messages, function tools, streaming,
logprobs) and ``/v1/completions`` (a text prompt). A bad request gets OpenAI's error shape
(``{"error": {"message", "type", "param", "code"}}``) naming the field and the fix.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .adapters import parse_tool_calls

ROLES = ("system", "developer", "user", "assistant", "tool")


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


class _Sampling(BaseModel):
    model_config = ConfigDict(extra="allow")  # other OpenAI knobs are accepted and ignored

    model: str = "policy"
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    n: int = Field(default=1, ge=1, le=1, description="one choice per call")
    stream: bool = False
    stream_options: dict[str, Any] | None = None


class ChatRequest(_Sampling):
    messages: list[ChatMessage] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    logprobs: bool = False


class CompletionRequest(_Sampling):
    prompt: str | list[str]
    max_tokens: int | None = Field(default=16, ge=1)
    logprobs: int | None = Field(default=None, ge=0, le=5)


class OpenAIRequestError(Exception):
    """A request the proxy refuses: ``status``, ``param`` and an OpenAI ``type``."""

    def __init__(
        self, message: str, *, param: str | None = None, status: int = 400, kind: str = ""
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.kind = kind or ("invalid_request_error" if status < 500 else "server_error")

    def body(self) -> dict[str, Any]:
        return {
            "error": {"message": self.message, "type": self.kind, "param": self.param, "code": None}
        }


def parse_request(model: type[BaseModel], body: Any) -> Any:
    """Validate a JSON body; the first error becomes an :class:`OpenAIRequestError`."""
    if not isinstance(body, dict):
        raise OpenAIRequestError("the request body must be a JSON object")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        err = exc.errors()[0]
        param = ".".join(str(p) for p in err["loc"]) or None
        raise OpenAIRequestError(f"{param}: {err['msg']}", param=param) from None


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
