"""The OpenAI wire format in one place: requests, responses, stream chunks, tool calls, errors.

Three users speak it, so they cannot drift apart:

- ``OpenAICompatiblePolicy`` (``policy.openai_policy``), the client: :func:`completion_body` out,
  :func:`read_completion_choices` in;
- the policy endpoint (``rollout.policy_endpoint``): token-id prompts in
  (:class:`CompletionRequest`), :func:`completion_response` out;
- the agents' capture proxy (``agents.capture_proxy``): chat messages or a text prompt in
  (:class:`ChatRequest`, :class:`CompletionRequest`), responses and server-sent events out.

The fields are OpenAI's plus the vLLM extensions our client sends (``top_k``, ``stop_token_ids``,
``return_token_ids``, ``token_ids`` in a choice); other OpenAI knobs are accepted and ignored. A
bad request becomes an :class:`OpenAIRequestError`, answered in OpenAI's error shape naming the
field and the fix. No I/O here: pydantic models and dict builders; the callers do the HTTP.
MCP tools become ``tools=`` entries with ``core.tool_schema.tools_to_openai``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.errors import InfrastructureError
from .errors import OpenAIRequestError as OpenAIRequestError
from .interface import SamplingSettings

#: Most prompts one completions request may carry.
MAX_PROMPTS = 4096

# ---- errors ----------------------------------------------------------------------------------


def parse_request(model: type[BaseModel], body: Any) -> Any:
    """Validate a request body (raw JSON bytes/text or the decoded object).

    Bad JSON, a non-object or the first validation error becomes an :class:`OpenAIRequestError`.
    """
    if isinstance(body, (bytes, bytearray, str)):
        try:
            body = json.loads(body)
        except ValueError as exc:
            raise OpenAIRequestError(f"the request body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise OpenAIRequestError("the request body must be a JSON object")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        err = exc.errors()[0]
        param = ".".join(str(p) for p in err["loc"]) or None
        raise OpenAIRequestError(f"{param}: {err['msg']}", param=param) from None


# ---- requests --------------------------------------------------------------------------------


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


class SamplingRequest(BaseModel):
    """The sampling fields both endpoints share; unset knobs take the server's defaults."""

    model_config = ConfigDict(extra="allow")  # other OpenAI knobs are accepted and ignored

    model: str = "policy"
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    top_k: int = Field(default=0, ge=0, description="vLLM extension; 0 = off")
    n: int = Field(default=1, ge=1, le=1, description="one choice per prompt")
    seed: int | None = None
    stop_token_ids: list[int] = Field(default_factory=list, description="vLLM extension")
    stream: bool = False
    stream_options: dict[str, Any] | None = None

    @property
    def requested_tokens(self) -> int | None:
        """The completion length the caller asked for (None: the server's limit)."""
        return None

    @property
    def include_usage(self) -> bool:
        """A stream ends with a usage chunk (``stream_options.include_usage``)."""
        return bool((self.stream_options or {}).get("include_usage"))

    def sampling(self, *, limit: int | None = None, temperature: float = 1.0) -> SamplingSettings:
        """Our sampling settings; ``limit`` caps the tokens, ``temperature`` is the default."""
        tokens = self.requested_tokens or limit
        if tokens is None:
            raise OpenAIRequestError("max_tokens: required by this server", param="max_tokens")
        return SamplingSettings(
            max_new_tokens=min(tokens, limit) if limit is not None else tokens,
            temperature=temperature if self.temperature is None else self.temperature,
            top_p=1.0 if self.top_p is None else self.top_p,
            top_k=self.top_k,
            stop_token_ids=tuple(self.stop_token_ids),
            seed=self.seed,
        )


class ChatRequest(SamplingRequest):
    messages: list[ChatMessage] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    logprobs: bool = False

    @property
    def requested_tokens(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens


class CompletionRequest(SamplingRequest):
    """A text prompt (or one-element list of it), or token-id lists (vLLM's batched form)."""

    prompt: (
        str
        | Annotated[list[str], Field(max_length=MAX_PROMPTS)]
        | Annotated[list[list[int]], Field(max_length=MAX_PROMPTS)]
    )
    max_tokens: int | None = Field(default=16, ge=1)
    logprobs: int | None = Field(default=None, ge=0, le=5)
    return_token_ids: bool = False  # vLLM extension: each choice carries its sampled ids
    echo: bool = False

    @property
    def requested_tokens(self) -> int | None:
        return self.max_tokens

    def token_prompts(self) -> list[list[int]]:
        """The prompts as token-id lists, for a server that does not tokenize."""
        prompt = self.prompt
        if isinstance(prompt, list) and all(isinstance(p, list) for p in prompt):
            return prompt  # type: ignore[return-value]
        raise OpenAIRequestError(
            "prompt: send token-id lists ([[id, ...], ...]); this server does not tokenize text",
            param="prompt",
        )

    def text_prompt(self) -> str:
        """The one text prompt of this call, for a server that tokenizes it itself."""
        prompt = self.prompt
        if isinstance(prompt, list):
            if len(prompt) != 1:
                raise OpenAIRequestError("prompt: send one prompt per call", param="prompt")
            prompt = prompt[0]
        if not isinstance(prompt, str):
            raise OpenAIRequestError(
                "prompt: send text; this server tokenizes prompts itself", param="prompt"
            )
        return prompt


def completion_body(
    model: str, prompts: Sequence[Sequence[int]], sampling: SamplingSettings
) -> dict[str, Any]:
    """The ``/v1/completions`` body for token-id prompts: the inverse of ``.sampling()``.

    It asks for ``"logprobs": 1, "return_token_ids": true`` so each choice carries its sampled ids
    and their logprobs. The seed goes only with a single prompt: a server applies one request
    seed to every prompt, which would make identical prompts (a GRPO group) sample alike.
    """
    body: dict[str, Any] = {
        "model": model,
        "prompt": [list(p) for p in prompts],
        "max_tokens": sampling.max_new_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "n": 1,
        "logprobs": 1,
        "return_token_ids": True,
        "echo": False,
    }
    if sampling.top_k > 0:
        body["top_k"] = sampling.top_k
    if sampling.stop_token_ids:
        body["stop_token_ids"] = list(sampling.stop_token_ids)
    if sampling.seed is not None and len(prompts) == 1:
        body["seed"] = sampling.seed
    return body


# ---- messages and tool calls -----------------------------------------------------------------


def text_of(content: Any) -> str:
    """Message content (a string or OpenAI content parts) as text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))


def plain_message(msg: ChatMessage) -> dict[str, Any]:
    """A message as a chat template expects it (text content; no tool-call entries)."""
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


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One ``tool_calls`` entry: OpenAI sends the arguments as a JSON string."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def assistant_message(
    content: str | None, calls: Sequence[tuple[str, dict[str, Any]]] = (), call_prefix: str = "call"
) -> dict[str, Any]:
    """An assistant reply; ``calls`` (name, arguments) get ids ``{call_prefix}_{i}``."""
    if not calls:
        return {"role": "assistant", "content": content or ""}
    entries = [tool_call(f"{call_prefix}_{i}", n, a) for i, (n, a) in enumerate(calls)]
    return {"role": "assistant", "content": content or None, "tool_calls": entries}


def finish_reason(policy_finish: str, *, tool_calls: bool = False) -> str:
    """OpenAI's ``finish_reason`` for a generation that ended with ``policy_finish``."""
    if tool_calls:
        return "tool_calls"
    return "length" if policy_finish == "length" else "stop"


# ---- responses -------------------------------------------------------------------------------


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    """A reply's ``usage``: token counts of the prompt(s) and the completion(s)."""
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def completion_choice(
    index: int,
    text: str,
    finish: str,
    *,
    logprobs: Sequence[float] | None = None,
    tokens: Sequence[str] | None = None,
    token_ids: Sequence[int] | None = None,
    prompt_token_ids: Sequence[int] | None = None,
) -> dict[str, Any]:
    """One ``text_completion`` choice; ``logprobs``/``tokens`` only when asked, ``token_ids``
    and ``prompt_token_ids`` are vLLM's extensions (left out when None)."""
    lp = None
    if logprobs is not None:
        lp = {
            "tokens": None if tokens is None else list(tokens),
            "token_logprobs": list(logprobs),
            "top_logprobs": None,
            "text_offset": None,
        }
    choice: dict[str, Any] = {"index": index, "text": text, "logprobs": lp, "finish_reason": finish}
    if token_ids is not None:
        choice["token_ids"] = list(token_ids)
    if prompt_token_ids is not None:
        choice["prompt_token_ids"] = list(prompt_token_ids)
    return choice


def completion_response(
    model: str, choices: list[dict[str, Any]], token_usage: dict[str, int]
) -> dict[str, Any]:
    """A ``/v1/completions`` reply."""
    return {
        "id": "cmpl-" + uuid.uuid4().hex[:24],
        "object": "text_completion",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
        "usage": token_usage,
    }


def chat_response(
    model: str,
    message: dict[str, Any],
    finish: str,
    token_usage: dict[str, int],
    *,
    logprobs: Sequence[float] | None = None,
    tokens: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A ``/v1/chat/completions`` reply with one choice; ``logprobs`` with ``tokens`` (the
    decoded text of each sampled id) when the request asked for them."""
    lp = None
    if logprobs is not None:
        lp = {
            "content": [
                {"token": t, "logprob": x, "bytes": list(t.encode()), "top_logprobs": []}
                for t, x in zip(tokens or [], logprobs, strict=True)
            ]
        }
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": lp, "finish_reason": finish}],
        "usage": token_usage,
    }


def model_list(*names: str) -> dict[str, Any]:
    """The ``/v1/models`` reply."""
    return {
        "object": "list",
        "data": [{"id": n, "object": "model", "owned_by": "openenv-train"} for n in names],
    }


# ---- streams ---------------------------------------------------------------------------------


def _chunk(base: dict[str, Any], body: dict[str, Any], finish: str | None, lp: Any = None) -> dict:
    return {**base, "choices": [{"index": 0, **body, "logprobs": lp, "finish_reason": finish}]}


def stream_chunks(response: dict[str, Any], include_usage: bool) -> list[str]:
    """A finished response replayed as server-sent events (our servers generate in one piece)."""
    base = {k: response[k] for k in ("id", "created", "model")}
    choice = response["choices"][0]
    finish = choice["finish_reason"]
    if response["object"] == "text_completion":
        base["object"] = "text_completion"
        chunks = [
            _chunk(base, {"text": choice["text"]}, None, choice["logprobs"]),
            _chunk(base, {"text": ""}, finish),
        ]
    else:
        base["object"] = "chat.completion.chunk"
        msg = choice["message"]
        first = {"role": "assistant", "content": msg.get("content") or ""}
        chunks = [_chunk(base, {"delta": first}, None, choice["logprobs"])]
        for i, call in enumerate(msg.get("tool_calls") or []):
            chunks.append(_chunk(base, {"delta": {"tool_calls": [{"index": i, **call}]}}, None))
        chunks.append(_chunk(base, {"delta": {}}, finish))
    if include_usage:
        chunks.append({**base, "choices": [], "usage": response["usage"]})
    return [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]


# ---- reading a completions reply (the client side) -------------------------------------------


@dataclass
class CompletionChoice:
    """One choice of a token-id completions reply, checked to hold what the client asked for."""

    index: int
    token_ids: list[int]
    logprobs: list[float]  # -inf where the server reported none
    finish_reason: str | None
    text: str | None
    prompt_token_ids: list[int] | None


def read_completion_choices(payload: Any, n_prompts: int) -> list[CompletionChoice]:
    """The choices of a reply to :func:`completion_body`, in prompt order (matched by ``index``).

    Raises ``InfrastructureError`` naming what is missing: a server that answers without
    ``token_ids`` or per-token logprobs cannot serve training.
    """
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(choices, list) or len(choices) != n_prompts:
        got = len(choices) if isinstance(choices, list) else type(choices).__name__
        raise InfrastructureError(f"completions reply: expected {n_prompts} choices, got {got}")
    out: list[CompletionChoice | None] = [None] * n_prompts
    for position, choice in enumerate(choices):
        index = int(choice.get("index", position))
        ids = choice.get("token_ids")
        if ids is None:
            raise InfrastructureError(
                "completions reply: choice has no token_ids; the server must support "
                '"return_token_ids": true (vLLM >= 0.10.2)'
            )
        logprobs = (choice.get("logprobs") or {}).get("token_logprobs")
        if logprobs is None or len(logprobs) != len(ids):
            raise InfrastructureError(
                f"completions reply: choice {index} has {len(ids)} token ids but logprobs "
                f"{'missing' if logprobs is None else len(logprobs)}"
            )
        if not 0 <= index < n_prompts or out[index] is not None:
            raise InfrastructureError(f"completions reply: bad or duplicate choice index {index}")
        out[index] = CompletionChoice(
            index=index,
            token_ids=list(ids),
            logprobs=[float("-inf") if x is None else x for x in logprobs],
            finish_reason=choice.get("finish_reason"),
            text=choice.get("text"),
            prompt_token_ids=choice.get("prompt_token_ids"),
        )
    return [c for c in out if c is not None]
