"""Clients for language-model endpoints, with OpenEnv 0.10's names (``openenv.core.llm_client``).

An ``LLMJudge`` rubric asks one of these for a score, and an agent loop can call a model with an
env's MCP tools through ``complete_with_tools``. ``OpenAIClient`` speaks the chat-completions API
that OpenAI, vLLM, TGI, Ollama and our own policy endpoint serve; ``AnthropicClient`` speaks
Anthropic's Messages API. The SDKs are optional: ``pip install "openenv-train[judge]"``.

An SDK client's connection pool belongs to the event loop that first used it, and a TRL reward
function runs each batch in a fresh loop; so a client here makes a new SDK client when it is
called from another event loop (OpenEnv's fails there with "Event loop is closed").
"""

from __future__ import annotations

import asyncio
import json
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.tool_schema import tool_input_schema, tools_to_anthropic, tools_to_openai

try:  # optional: the `judge` extra; OpenAIClient says how to install it
    from openai import AsyncOpenAI
except ImportError:  # pragma: no cover - exercised only without the extra
    AsyncOpenAI = None

__all__ = [
    "AnthropicClient",
    "LLMClient",
    "LLMResponse",
    "OpenAIClient",
    "ToolCall",
    "create_llm_client",
    "messages_to_anthropic",
    "tool_input_schema",
    "tools_to_anthropic",
    "tools_to_openai",
]


@dataclass
class ToolCall:
    """One tool call the model asked for: ``args`` are already decoded from JSON."""

    id: str
    name: str
    args: dict[str, Any]


@dataclass
class LLMResponse:
    """A model's reply: its text and the tool calls it made (possibly none)."""

    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)

    def to_message_dict(self) -> dict[str, Any]:
        """The reply as an OpenAI-format assistant message, ready to append to the history."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.args)},
                }
                for call in self.tool_calls
            ]
        return message


class LLMClient(ABC):
    """A model endpoint at ``endpoint:port``. Subclasses implement ``complete`` for a protocol,
    and ``complete_with_tools`` when the protocol has tool calling."""

    def __init__(self, endpoint: str, port: int) -> None:
        self.endpoint = endpoint
        self.port = port

    @abstractmethod
    async def complete(self, prompt: str, **kwargs: Any) -> str:
        """The model's answer to one user ``prompt``; ``kwargs`` override sampling defaults."""

    async def complete_with_tools(
        self, messages: list[dict[str, Any]], tools: list[Any], **kwargs: Any
    ) -> LLMResponse:
        """One model turn over OpenAI-format ``messages`` with MCP ``tools`` on offer."""
        raise NotImplementedError(f"{type(self).__name__} does not support tool calling")

    @property
    def base_url(self) -> str:
        return f"{self.endpoint}:{self.port}"


class _SDKClient(LLMClient):
    """What both SDK-backed clients share: the model settings and one SDK client per loop."""

    def __init__(
        self,
        endpoint: str,
        port: int,
        model: str,
        api_key: str | None = None,
        system_prompt: str | None = None,
        temperature: float | None = 0.0,
        max_tokens: int = 256,
    ) -> None:
        super().__init__(endpoint, port)
        self.model = model
        self.system_prompt = system_prompt
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._new_sdk_client = self._sdk_factory(api_key if api_key is not None else "not-needed")
        self._client = self._new_sdk_client()

    @abstractmethod
    def _sdk_factory(self, api_key: str) -> Callable[[], Any]:
        """A zero-argument maker of this protocol's SDK client (raises if the SDK is missing)."""

    def _sdk(self) -> Any:
        """The SDK client for the running event loop (a new one when the loop changed)."""
        loop = asyncio.get_running_loop()
        owner = getattr(self, "_loop", None)
        # (an object made with __new__ and a ``_client`` set by hand, as in OpenEnv's tests,
        # has no maker: it keeps that client)
        if owner is not None and owner() is not loop and hasattr(self, "_new_sdk_client"):
            self._client = self._new_sdk_client()
        self._loop = weakref.ref(loop)
        return self._client

    def _sampling(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """temperature and max_tokens (the defaults unless given; a temperature of None is not
        sent, for models that refuse one), then any other SDK options."""
        options = {
            "temperature": kwargs.get("temperature", self.temperature),
            "max_tokens": kwargs.get("max_tokens", self.max_tokens),
            **{k: v for k, v in kwargs.items() if k not in ("temperature", "max_tokens")},
        }
        if options["temperature"] is None:
            del options["temperature"]
        return options


class OpenAIClient(_SDKClient):
    """An OpenAI-compatible chat-completions endpoint (``{endpoint}:{port}/v1``).

    ``api_key=None`` sends ``"not-needed"``, which local servers (vLLM, Ollama) accept.
    ``system_prompt`` is sent before every ``complete`` prompt; ``temperature=None`` leaves the
    temperature to the server. Keyword arguments of ``complete`` other than ``temperature`` and
    ``max_tokens`` go to the SDK's ``create`` as they are (``top_p``, ``stop``...).
    """

    def _sdk_factory(self, api_key: str) -> Callable[[], Any]:
        sdk = AsyncOpenAI  # read now, so a patched module attribute is what gets used
        if sdk is None:
            raise ImportError(
                "OpenAIClient needs the 'openai' package: pip install 'openenv-train[judge]'"
            )
        base_url = f"{self.base_url}/v1"
        return lambda: sdk(base_url=base_url, api_key=api_key)

    async def complete(self, prompt: str, **kwargs: Any) -> str:
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        messages.append({"role": "user", "content": prompt})
        response = await self._sdk().chat.completions.create(
            model=self.model, messages=messages, **self._sampling(kwargs)
        )
        return response.choices[0].message.content or ""

    async def complete_with_tools(
        self, messages: list[dict[str, Any]], tools: list[Any], **kwargs: Any
    ) -> LLMResponse:
        request: dict[str, Any] = {"model": self.model, "messages": messages}
        request.update(self._sampling(kwargs))
        if tools:
            request["tools"] = tools_to_openai(tools)
        response = await self._sdk().chat.completions.create(**request)
        message = response.choices[0].message
        calls = [
            ToolCall(
                id=call.id,
                name=call.function.name,
                args=_decode_arguments(call.function.name, call.function.arguments),
            )
            for call in message.tool_calls or []
        ]
        return LLMResponse(content=message.content or "", tool_calls=calls)


#: sampling options the anthropic SDK (1.0 on) only sends inside ``extra_body``
_ANTHROPIC_BODY_ONLY = ("temperature", "top_p", "top_k")


class AnthropicClient(_SDKClient):
    """Anthropic's Messages API at ``{endpoint}:{port}`` (needs the ``anthropic`` package).

    ``temperature``, ``top_p`` and ``top_k`` are sent in the request body with any SDK version;
    pass ``temperature=None`` for models that accept no temperature.
    """

    def _sampling(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """As for OpenAI, but the sampling knobs travel in ``extra_body``: anthropic 1.0 took
        them out of ``messages.create``'s arguments, and the API still reads them in the body."""
        options = super()._sampling(kwargs)
        knobs = {k: options.pop(k) for k in _ANTHROPIC_BODY_ONLY if k in options}
        if knobs:
            options["extra_body"] = {**options.get("extra_body", {}), **knobs}
        return options

    def _sdk_factory(self, api_key: str) -> Callable[[], Any]:
        try:
            from anthropic import AsyncAnthropic
        except ImportError as exc:
            raise ImportError(
                "AnthropicClient needs the 'anthropic' package: pip install 'openenv-train[judge]'"
            ) from exc
        base_url = self.base_url
        return lambda: AsyncAnthropic(base_url=base_url, api_key=api_key)

    async def complete(self, prompt: str, **kwargs: Any) -> str:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
        }
        request.update(self._sampling(kwargs))
        if self.system_prompt:
            request["system"] = self.system_prompt
        response = await self._sdk().messages.create(**request)
        return "".join(block.text for block in response.content if block.type == "text")

    async def complete_with_tools(
        self, messages: list[dict[str, Any]], tools: list[Any], **kwargs: Any
    ) -> LLMResponse:
        system, turns = messages_to_anthropic(messages)
        request: dict[str, Any] = {"model": self.model, "messages": turns}
        request.update(self._sampling(kwargs))
        if system or self.system_prompt:
            request["system"] = system or self.system_prompt
        if tools:
            request["tools"] = tools_to_anthropic(tools)
        response = await self._sdk().messages.create(**request)
        text = "".join(block.text for block in response.content if block.type == "text")
        calls = [
            ToolCall(id=block.id, name=block.name, args=dict(block.input))
            for block in response.content
            if block.type == "tool_use"
        ]
        return LLMResponse(content=text, tool_calls=calls)


#: provider -> (endpoint, port, client class) for ``create_llm_client``
HOSTED_PROVIDERS: dict[str, tuple[str, int, type[_SDKClient]]] = {
    "openai": ("https://api.openai.com", 443, OpenAIClient),
    "anthropic": ("https://api.anthropic.com", 443, AnthropicClient),
}


def create_llm_client(
    provider: str,
    model: str,
    api_key: str,
    *,
    system_prompt: str | None = None,
    temperature: float | None = 0.0,
    max_tokens: int = 4096,
) -> LLMClient:
    """A client for a hosted provider by name (``"openai"`` or ``"anthropic"``, any case)."""
    key = provider.lower()
    if key not in HOSTED_PROVIDERS:
        raise ValueError(
            f"create_llm_client: provider {provider!r} is not supported; use one of "
            f"{sorted(HOSTED_PROVIDERS)}, or OpenAIClient(endpoint, port, model) for any "
            "OpenAI-compatible server"
        )
    endpoint, port, cls = HOSTED_PROVIDERS[key]
    return cls(
        endpoint,
        port,
        model,
        api_key=api_key,
        system_prompt=system_prompt,
        temperature=temperature,
        max_tokens=max_tokens,
    )


# ---- OpenAI messages in each provider's shape (tools: core.tool_schema) ---------------------------------------


def _decode_arguments(tool: str, arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        decoded = json.loads(arguments or "{}")
    except ValueError as exc:
        raise ValueError(
            f"tool call {tool!r}: arguments must be a JSON object, got {str(arguments)[:200]!r}"
        ) from exc
    if not isinstance(decoded, dict):
        raise ValueError(f"tool call {tool!r}: arguments must be a JSON object, got {decoded!r}")
    return decoded


def messages_to_anthropic(
    messages: list[dict[str, Any]],
) -> tuple[str, list[dict[str, Any]]]:
    """OpenAI-format messages as ``(system text, Anthropic messages)``.

    System (and ``developer``) messages are joined into the system text; assistant tool calls
    become ``tool_use`` blocks; tool results become ``tool_result`` blocks in user turns, merged
    into one turn when they follow each other. The caller's messages are never changed.
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        if role in ("system", "developer"):
            system.append(message["content"])
        elif role == "user":
            turns.append({"role": "user", "content": message["content"]})
        elif role == "assistant" and message.get("tool_calls"):
            blocks: list[dict[str, Any]] = []
            if message.get("content"):
                blocks.append({"type": "text", "text": message["content"]})
            for call in message["tool_calls"]:
                name = call["function"]["name"]
                args = _decode_arguments(name, call["function"].get("arguments"))
                blocks.append({"type": "tool_use", "id": call["id"], "name": name, "input": args})
            turns.append({"role": "assistant", "content": blocks})
        elif role == "assistant":
            turns.append({"role": "assistant", "content": message.get("content") or ""})
        elif role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": message["content"],
            }
            last = turns[-1] if turns else None
            if last is not None and last["role"] == "user" and isinstance(last["content"], list):
                last["content"] = [*last["content"], result]
            else:
                turns.append({"role": "user", "content": [result]})
        else:
            raise ValueError(
                f"messages[{i}]: role {role!r} is not one of system, developer, user, "
                "assistant, tool"
            )
    return "\n\n".join(system), turns
