"""``CaptureProxy``: an OpenAI-compatible endpoint that any agent program can use as its model.

Every call goes to our batched policy through one ``GenerationBatcher``, so N harnesses running at
once share each ``generate``; every call is recorded token-exactly in its episode's
:class:`~openenv_train.agents.capture.CaptureTrace`. Each episode has its own base URL,
``{proxy}/e/{episode_id}/v1``: give it to the harness as ``OPENAI_BASE_URL``. The server runs on
the caller's event loop (the policy and batcher live there), bound to loopback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from ..harness.adapters import parse_tool_calls
from ..policy.interface import Generation, Policy, SamplingSettings
from ..policy.openai_wire import (
    ChatRequest,
    CompletionRequest,
    OpenAIRequestError,
    assistant_message,
    chat_response,
    completion_choice,
    completion_response,
    finish_reason,
    message_key,
    model_list,
    parse_request,
    plain_message,
    stream_chunks,
    usage,
)
from ..rollout.batcher import GenerationBatcher
from ..rollout.tokens import TokenCodec
from .capture import CaptureTrace
from .loop_server import LoopServer

log = logging.getLogger("openenv_train.agents.proxy")


@dataclass
class ProxyEpisode:
    """One harness episode: its URL, its trace, and what the harness sent last."""

    episode_id: str
    base_url: str
    trace: CaptureTrace
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    prev_keys: list[tuple[Any, ...]] | None = None  # chat: the history the next call must extend
    prev_text: str | None = None  # completions: the text the next prompt must extend


class CaptureProxy:
    """Serve ``/e/{episode}/v1/chat/completions`` and ``/v1/completions`` from ``policy``.

    ``max_new_tokens`` caps any request's ``max_tokens``; ``max_prompt_tokens`` and
    ``max_episodes`` bound memory. ``max_wait_s`` is how long a batch waits for harnesses that
    are busy with tools before it runs without them.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        codec: TokenCodec | None = None,
        batcher: GenerationBatcher | None = None,
        max_new_tokens: int = 256,
        max_prompt_tokens: int = 32768,
        max_episodes: int = 4096,
        temperature: float = 1.0,
        max_wait_s: float = 0.02,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.policy = policy
        self.codec = codec or TokenCodec(policy.tokenizer)
        self.batcher = batcher or GenerationBatcher(policy, max_wait_s=max_wait_s)
        self.max_new_tokens = max_new_tokens
        self.max_prompt_tokens = max_prompt_tokens
        self.max_episodes = max_episodes
        self.temperature = temperature
        self.url: str | None = None
        self.episodes: dict[str, ProxyEpisode] = {}
        self.app = self._build_app()
        self._server = LoopServer(self.app, host=host, port=port)

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self) -> str:
        """Start serving; returns the proxy's base URL."""
        self.url = await self._server.start()
        return self.url

    async def stop(self) -> None:
        """Stop serving, close every open episode, stop the batcher; idempotent."""
        for eid in list(self.episodes):
            self.close_episode(eid)
        await self._server.stop()
        self.url = None
        await self.batcher.aclose()

    async def __aenter__(self) -> CaptureProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ---- episodes --------------------------------------------------------------------------

    def open_episode(self, episode_id: str | None = None) -> ProxyEpisode:
        """A fresh episode with its own base URL; it counts toward the batcher's live episodes."""
        if self.url is None:
            raise RuntimeError("start the proxy first (await proxy.start() or async with proxy)")
        if len(self.episodes) >= self.max_episodes:
            raise RuntimeError(
                f"{len(self.episodes)} episodes are open (max_episodes={self.max_episodes}); "
                "close finished ones with close_episode()"
            )
        eid = episode_id or uuid.uuid4().hex[:16]
        if eid in self.episodes:
            raise ValueError(f"episode_id {eid!r} is already open")
        ep = ProxyEpisode(eid, f"{self.url}/e/{eid}/v1", CaptureTrace(eid))
        self.episodes[eid] = ep
        self.batcher.register()
        return ep

    def close_episode(self, episode_id: str) -> CaptureTrace:
        """End the episode (later calls to its URL get 404) and return its trace."""
        ep = self.episodes.pop(episode_id, None)
        if ep is None:
            raise KeyError(f"no open episode {episode_id!r}")
        self.batcher.unregister()
        return ep.trace

    # ---- serving ---------------------------------------------------------------------------

    def _build_app(self) -> FastAPI:
        app = FastAPI(title="openenv-train capture proxy")

        @app.post("/e/{episode_id}/v1/chat/completions")
        async def chat(episode_id: str, request: Request) -> Response:
            return await self._serve(episode_id, request, self._chat)

        @app.post("/e/{episode_id}/v1/completions")
        async def completions(episode_id: str, request: Request) -> Response:
            return await self._serve(episode_id, request, self._complete)

        @app.get("/e/{episode_id}/v1/models")
        async def models(episode_id: str) -> dict[str, Any]:
            return model_list("policy")

        return app

    async def _serve(self, episode_id: str, request: Request, handler: Any) -> Response:
        ep = self.episodes.get(episode_id)
        try:
            if ep is None:
                raise OpenAIRequestError(
                    f"no open episode {episode_id!r}; use the base_url that open_episode() returned",
                    status=404,
                    kind="not_found_error",
                )
            body = await request.body()
            async with ep.lock:  # one call at a time per episode keeps the token chain exact
                req, response = await handler(ep, body)
        except OpenAIRequestError as exc:
            if ep is not None:
                ep.trace.request_errors += 1
            return JSONResponse(exc.body(), status_code=exc.status)
        if req.stream:
            chunks = stream_chunks(response, req.include_usage)
            return StreamingResponse(iter(chunks), media_type="text/event-stream")
        return JSONResponse(response)

    def _sampling(self, req: ChatRequest | CompletionRequest) -> SamplingSettings:
        # a per-request seed is ignored: every agent's own seed would split the shared batch
        sampling = req.sampling(limit=self.max_new_tokens, temperature=self.temperature)
        return replace(sampling, seed=None)

    async def _generate(self, prompt_ids: list[int], sampling: SamplingSettings) -> Generation:
        if len(prompt_ids) > self.max_prompt_tokens:
            raise OpenAIRequestError(
                f"the prompt has {len(prompt_ids)} tokens, over max_prompt_tokens="
                f"{self.max_prompt_tokens}; shorten the conversation",
                param="messages",
            )
        try:
            return await self.batcher.generate(prompt_ids, sampling)
        except Exception as exc:  # the policy failed: an infrastructure error, never a reply
            log.exception("policy generate failed")
            raise OpenAIRequestError(
                f"the policy failed: {type(exc).__name__}: {exc}", status=500
            ) from exc

    async def _chat(self, ep: ProxyEpisode, body: bytes) -> tuple[ChatRequest, dict[str, Any]]:
        req: ChatRequest = parse_request(ChatRequest, body)
        keys = [message_key(m) for m in req.messages]
        messages = [plain_message(m) for m in req.messages]
        env_ids = None
        prev = ep.prev_keys
        if prev is not None and len(keys) > len(prev) and keys[: len(prev)] == prev:
            new = messages[len(prev) :]
            if all(m["role"] != "assistant" for m in new):
                env_ids = self.codec.turn_ids(new)
        if env_ids is not None:
            prompt_ids = list(ep.trace.context or []) + env_ids
        else:
            if req.tools and not self.codec.use_template:  # no template renders tools: say them
                messages = [
                    {"role": "system", "content": "Tools: " + json.dumps(req.tools)},
                    *messages,
                ]
            prompt_ids = self.codec.prompt_ids(messages, tools=req.tools)
        gen = await self._generate(prompt_ids, self._sampling(req))
        message = _hermes_reply(gen.text, f"call_{ep.episode_id}_{len(ep.trace.calls)}")
        finish = finish_reason(gen.finish_reason, tool_calls="tool_calls" in message)
        request = {"messages": len(req.messages), "tools": len(req.tools or [])}
        _record(ep, "chat.completions", prompt_ids, gen, finish, env_ids, request, message)
        ep.prev_keys = [*keys, message_key(message)]
        response = chat_response(
            req.model,
            message,
            finish,
            usage(len(prompt_ids), len(gen.token_ids)),
            **self._logprobs(gen, req.logprobs),
        )
        return req, response

    async def _complete(
        self, ep: ProxyEpisode, body: bytes
    ) -> tuple[CompletionRequest, dict[str, Any]]:
        req: CompletionRequest = parse_request(CompletionRequest, body)
        prompt = req.text_prompt()
        env_ids = None
        if ep.prev_text is not None and prompt.startswith(ep.prev_text):
            env_ids = self.codec.encode_text(prompt[len(ep.prev_text) :])
            prompt_ids = list(ep.trace.context or []) + env_ids
        else:
            prompt_ids = self.codec.encode_text(prompt)
        gen = await self._generate(prompt_ids, self._sampling(req))
        finish = finish_reason(gen.finish_reason)
        request = {"prompt_chars": len(prompt)}
        _record(ep, "completions", prompt_ids, gen, finish, env_ids, request, {"text": gen.text})
        ep.prev_text = prompt + gen.text
        choice = completion_choice(
            0, gen.text, finish, **self._logprobs(gen, req.logprobs is not None)
        )
        response = completion_response(
            req.model, [choice], usage(len(prompt_ids), len(gen.token_ids))
        )
        return req, response

    def _logprobs(self, gen: Generation, wanted: bool) -> dict[str, Any]:
        """The reply's logprobs with each sampled token's text, when the request asked."""
        if not wanted:
            return {}
        tokens = [self.policy.tokenizer.decode([t]) for t in gen.token_ids]
        return {"logprobs": gen.logprobs, "tokens": tokens}


def _hermes_reply(text: str, call_prefix: str) -> dict[str, Any]:
    """The assistant message for generated text: Hermes ``<tool_call>``s become ``tool_calls``."""
    calls = [c for c in parse_tool_calls(text) if c.error is None] if "<tool_call>" in text else []
    if not calls:
        return assistant_message(text)
    content = text.split("<tool_call>", 1)[0].strip()
    return assistant_message(content, [(c.name, c.arguments) for c in calls], call_prefix)


def _record(
    ep: ProxyEpisode,
    endpoint: str,
    prompt_ids: list[int],
    gen: Generation,
    finish: str,
    env_ids: list[int] | None,
    request: dict[str, Any],
    response: dict[str, Any],
) -> None:
    ep.trace.record_call(
        endpoint=endpoint,
        prompt_ids=prompt_ids,
        completion_ids=gen.token_ids,
        logprobs=gen.logprobs,
        finish_reason=finish,
        text=gen.text,
        env_ids=env_ids,
        request=request,
        response=response,
    )
