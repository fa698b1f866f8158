"""A small real OpenAI-compatible ``/v1/completions`` server over TransformersPolicy, for tests.

It speaks the subset vLLM documents for token-id prompts (``prompt`` as a list of id lists,
``logprobs``, ``return_token_ids``, ``stop_token_ids``, ``top_k``, ``seed``) in the one wire
format (``policy.openai_wire``), with no batcher in between, and answers its choices reversed so
the client must match them back by ``index``.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn
from fastapi import FastAPI, HTTPException, Request

from openenv_train.policy import TransformersPolicy
from openenv_train.policy.openai_wire import (
    CompletionRequest,
    OpenAIRequestError,
    completion_choice,
    completion_response,
    parse_request,
    usage,
)


def build_app(policy: TransformersPolicy, served_name: str) -> FastAPI:
    app = FastAPI()
    app.state.requests = []

    @app.post("/v1/completions")
    async def completions(request: Request) -> dict[str, Any]:
        try:
            req: CompletionRequest = parse_request(CompletionRequest, await request.body())
        except OpenAIRequestError as exc:
            raise HTTPException(exc.status, exc.message) from exc
        app.state.requests.append(req.model_dump(exclude_unset=True))
        if req.model != served_name:
            raise HTTPException(404, f"model {req.model!r} not found")
        prompts = req.token_prompts()
        try:
            gens = await policy.generate(prompts, req.sampling())
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from exc
        ids = req.return_token_ids
        choices = [
            completion_choice(
                i,
                g.text,
                g.finish_reason,
                logprobs=g.logprobs if req.logprobs is not None else None,
                token_ids=g.token_ids if ids else None,
                prompt_token_ids=prompts[i] if ids else None,
            )
            for i, g in enumerate(gens)
        ]
        used = usage(sum(map(len, prompts)), sum(len(g.token_ids) for g in gens))
        return completion_response(served_name, choices[::-1], used)  # matched back by index

    return app


class ServerThread:
    """uvicorn on 127.0.0.1 with an OS-picked port, in a background thread."""

    def __init__(self, app: FastAPI) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]})

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("test completions server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()
