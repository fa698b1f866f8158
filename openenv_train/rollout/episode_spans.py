"""OpenTelemetry spans of the rollout: one ``episode`` span per attempt, with a child span for
each model call (``model.generate``) and each env call (``env.reset``, ``env.step``).

Why: the env client sends the current span's ``traceparent`` to the server, whose ``env.step``
span then joins the episode's trace; a slow step is followed from the trainer to the env. With
tracing off (no OpenTelemetry SDK or no tracer provider set) every helper hands back what it was
given and adds nothing to the hot path.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

from ..server.spans import tracer_for

__all__ = ["rollout_span", "traced_attempts", "traced_turns"]

TRACER = "openenv_train.rollout"
T = TypeVar("T")
R = TypeVar("R")


def rollout_span(name: str, **attributes: Any) -> AbstractContextManager[Any]:
    """A span around a block (current for its duration), or a no-op with tracing off."""
    tracer = tracer_for(TRACER)
    if tracer is None:
        return nullcontext()
    return tracer.start_as_current_span(name, attributes=attributes)


def traced_attempts(fn: Callable[[Any], Awaitable[R]]) -> Callable[[Any], Awaitable[R]]:
    """``fn`` (one attempt of one row) inside an ``episode`` span, when tracing is on."""
    if tracer_for(TRACER) is None:
        return fn

    async def episode(attempt: Any) -> R:
        with rollout_span(
            "episode",
            **{
                "openenv.row": attempt.row,
                "openenv.group": attempt.group,
                "openenv.attempt": attempt.attempt,
            },
        ):
            return await fn(attempt)

    return episode


def traced_turns(
    generate: Callable[..., Awaitable[Any]], respond: Callable[..., Awaitable[Any]]
) -> tuple[Callable[..., Awaitable[Any]], Callable[..., Awaitable[Any]]]:
    """``generate`` and ``respond`` each inside a span (``model.generate``, ``env.step``), when
    tracing is on; else the two as they are."""
    if tracer_for(TRACER) is None:
        return generate, respond

    async def traced_generate(*args: Any, **kwargs: Any) -> Any:
        with rollout_span("model.generate") as span:
            gen = await generate(*args, **kwargs)
            span.set_attribute("openenv.tokens", len(getattr(gen, "token_ids", ()) or ()))
            return gen

    async def traced_respond(*args: Any, **kwargs: Any) -> Any:
        with rollout_span("env.step"):
            return await respond(*args, **kwargs)

    return traced_generate, traced_respond
