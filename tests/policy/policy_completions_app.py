"""A small real OpenAI-compatible ``/v1/completions`` server over TransformersPolicy, for tests.

It speaks the subset vLLM documents for token-id prompts: ``prompt`` as a list of id lists,
``logprobs``, ``return_token_ids``, ``stop_token_ids``, ``top_k``, ``seed``.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

from openenv_train.policy import SamplingSettings, TransformersPolicy


class CompletionRequest(BaseModel):
    model: str
    prompt: list[list[int]]
    max_tokens: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    n: int = 1
    logprobs: int | None = None
    return_token_ids: bool = False
    echo: bool = False
    stop_token_ids: list[int] = []
    seed: int | None = None


def build_app(policy: TransformersPolicy, served_name: str) -> FastAPI:
    app = FastAPI()
    app.state.requests = []

    @app.post("/v1/completions")
    async def completions(req: CompletionRequest) -> dict[str, Any]:
        app.state.requests.append(req.model_dump())
        if req.model != served_name:
            raise HTTPException(404, f"model {req.model!r} not found")
        sampling = SamplingSettings(
            max_new_tokens=req.max_tokens, temperature=req.temperature, top_p=req.top_p,
            top_k=req.top_k, stop_token_ids=tuple(req.stop_token_ids), seed=req.seed,
        )  # fmt: skip
        try:
            gens = await policy.generate(req.prompt, sampling)
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from exc
        choices = [
            {
                "index": i,
                "text": g.text,
                "finish_reason": g.finish_reason,
                "token_ids": g.token_ids if req.return_token_ids else None,
                "prompt_token_ids": req.prompt[i] if req.return_token_ids else None,
                "logprobs": {"token_logprobs": g.logprobs} if req.logprobs is not None else None,
            }
            for i, g in enumerate(gens)
        ]
        return {"object": "text_completion", "model": served_name, "choices": choices[::-1]}

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
