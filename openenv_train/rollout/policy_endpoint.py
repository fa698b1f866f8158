"""Serve any ``Policy`` as an OpenAI-compatible ``/v1/completions`` endpoint (token-id prompts).

Rollout workers on other processes or nodes reach the trainer's policy on the driver through it
with ``OpenAICompatiblePolicy``: the same request/reply subset vLLM speaks (``prompt`` as id
lists, ``logprobs``, ``return_token_ids``, ``stop_token_ids``). Requests from all workers go
through one ``GenerationBatcher``, so prompts from different workers that arrive together share a
model call. Requests and replies are the one OpenAI wire format (``policy.openai_wire``) the
client and the agents' capture proxy also speak; refusals come in OpenAI's error shape. It binds
127.0.0.1 by default; anything else needs ``token`` (clients send it as ``Authorization: Bearer``).
"""

from __future__ import annotations

import asyncio
import hmac
import socket
import threading
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from ..core.loopback import is_loopback
from ..policy.interface import Policy
from ..policy.openai_wire import (
    CompletionRequest,
    OpenAIRequestError,
    completion_choice,
    completion_response,
    model_list,
    parse_request,
    usage,
)
from .batcher import GenerationBatcher


def _completions_app(
    policy: Policy, model: str, batcher_kwargs: dict[str, Any], token: str | None
) -> FastAPI:
    app = FastAPI()
    state: dict[str, Any] = {}

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return model_list(model)

    @app.post("/v1/completions")
    async def completions(request: Request) -> JSONResponse:
        try:
            return JSONResponse(await complete(request))
        except OpenAIRequestError as exc:
            return JSONResponse(exc.body(), status_code=exc.status)

    async def complete(request: Request) -> dict[str, Any]:
        if token is not None:
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given, f"Bearer {token}"):
                raise OpenAIRequestError(
                    "missing or wrong bearer token", status=401, kind="authentication_error"
                )
        req: CompletionRequest = parse_request(CompletionRequest, await request.body())
        if req.model != model:
            raise OpenAIRequestError(
                f"model {req.model!r} not found; this endpoint serves {model!r}",
                param="model",
                status=404,
                kind="not_found_error",
            )
        prompts = req.token_prompts()
        batcher = state.get("batcher")
        if batcher is None:  # bound to this server's event loop
            batcher = state["batcher"] = GenerationBatcher(policy, **batcher_kwargs)
        sampling = req.sampling()
        for _ in prompts:
            batcher.register()
        try:
            gens = await asyncio.gather(*(batcher.generate(p, sampling) for p in prompts))
        except ValueError as exc:
            raise OpenAIRequestError(str(exc), param="prompt") from exc
        finally:
            for _ in prompts:
                batcher.unregister()
        choices = [
            completion_choice(
                i,
                g.text,
                g.finish_reason,
                logprobs=g.logprobs if req.logprobs is not None else None,
                token_ids=g.token_ids if req.return_token_ids else None,
            )
            for i, g in enumerate(gens)
        ]
        used = usage(sum(map(len, prompts)), sum(len(g.token_ids) for g in gens))
        return completion_response(model, choices, used)

    return app


class PolicyEndpoint:
    """``/v1/completions`` for ``policy`` in a background thread; ``with`` starts and stops it.

    ``base_url`` is what ``OpenAICompatiblePolicy(base_url, model, tokenizer=...)`` takes. The
    policy runs on the endpoint's own event loop, so it must not be shared with another loop's
    batcher at the same time.
    """

    def __init__(
        self,
        policy: Policy,
        model: str = "policy",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        max_batch_size: int = 512,
        max_wait_s: float = 0.005,
    ) -> None:
        if not is_loopback(host) and not token:
            raise ValueError(
                f"host={host!r} exposes the policy to other machines; give token= so requests "
                "need 'Authorization: Bearer <token>', or keep host='127.0.0.1'"
            )
        import uvicorn

        self.model = model
        self.token = token
        app = _completions_app(
            policy, model, {"max_batch_size": max_batch_size, "max_wait_s": max_wait_s}, token
        )
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        bound = (
            host if host not in ("0.0.0.0", "::") else socket.gethostbyname(socket.gethostname())
        )
        self.base_url = f"http://{bound}:{self._sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._sock]},
            name="openenv-train-policy-endpoint",
            daemon=True,
        )

    def start(self) -> str:
        """Start serving; returns ``base_url`` once the server accepts requests."""
        if not self._thread.is_alive():
            self._thread.start()
            for _ in range(1000):
                if self._server.started or not self._thread.is_alive():
                    break
                threading.Event().wait(0.01)
            if not self._server.started:
                self.stop()
                raise RuntimeError(f"the policy endpoint on {self.base_url} did not start")
        return self.base_url

    def stop(self) -> None:
        """Stop serving and close the socket. Idempotent."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._sock.close()

    def __enter__(self) -> PolicyEndpoint:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
