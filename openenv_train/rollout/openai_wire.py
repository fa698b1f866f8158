"""The one OpenAI-compatible request model: ``/v1/completions``, ``/v1/chat/completions``, errors.

Two servers speak it. The policy endpoint (``rollout.policy_endpoint``) serves token-id prompts to
``OpenAICompatiblePolicy`` on rollout workers; the agents' capture proxy
(``agents.capture_proxy``) serves text prompts and chat messages to any agent program. The
fields are OpenAI's plus the vLLM extensions our client sends (``top_k``, ``stop_token_ids``,
``return_token_ids``); other OpenAI knobs are accepted and ignored. A bad request becomes an
:class:`OpenAIRequestError`, answered in OpenAI's error shape naming the field and the fix.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..policy.base import SamplingSettings

#: Most prompts one completions request may carry.
MAX_PROMPTS = 4096


class OpenAIRequestError(Exception):
    """A request a server refuses: ``status``, ``param`` and an OpenAI error ``type``."""

    def __init__(
        self, message: str, *, param: str | None = None, status: int = 400, kind: str = ""
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.kind = kind or ("invalid_request_error" if status < 500 else "server_error")

    def body(self) -> dict[str, Any]:
        """OpenAI's error body: ``{"error": {"message", "type", "param", "code"}}``."""
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
