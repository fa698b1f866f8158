"""One connected OpenTelemetry trace from a rollout episode down to the env server's step: the
episode span, its model-call and env-call children, and the server's ``env.step`` span under the
env call (its ``traceparent`` carried per batch sub-frame and on the handshake).

The SDK's in-memory exporter receives the spans; the server runs in this process.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from blackjack_env.models import BlackjackAction, BlackjackObservation, BlackjackState
from blackjack_env.server.environment import BlackjackEnvironment
from blackjack_env.text_spec import VOCABULARY, BlackjackTextSpec, basic_strategy_answer
from server_helpers import ServerThread

from openenv_train import create_app
from openenv_train.policy.tiny import build_word_tokenizer
from openenv_train.rollout import RolloutConfig, RolloutEngine, ScriptedPolicy
from openenv_train.server.spans import tracing_on

trace = pytest.importorskip("opentelemetry.trace")
sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """A tracer provider with the in-memory exporter, set for this test and unset after it.

    OpenTelemetry lets a process set its provider once; like OpenTelemetry's own test helpers
    (``reset_trace_globals``), the fixture resets the API's globals afterwards, so the servers of
    later tests in this process trace nothing (and keep no spans)."""
    from opentelemetry.util._once import Once

    if trace._TRACER_PROVIDER is not None:  # pragma: no cover - someone else's provider
        pytest.skip("another tracer provider is set in this process")
    exporter = InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    try:
        yield exporter
    finally:
        trace._TRACER_PROVIDER = None
        trace._TRACER_PROVIDER_SET_ONCE = Once()
        provider.shutdown()
    assert not tracing_on()  # later servers in this process trace nothing


@pytest.fixture
def server() -> Iterator[ServerThread]:
    app = create_app(BlackjackEnvironment, BlackjackAction, BlackjackObservation, BlackjackState)
    srv = ServerThread(app).start()
    yield srv
    srv.stop()


def _by_id(finished: Any) -> dict[int, Any]:
    return {s.context.span_id: s for s in finished}


@pytest.mark.parametrize("batch_frames", [True, False], ids=["batch", "one-session"])
async def test_one_trace_from_episode_to_env_step(
    spans: InMemorySpanExporter, server: ServerThread, batch_frames: bool
) -> None:
    tokenizer = build_word_tokenizer(VOCABULARY)
    policy = ScriptedPolicy(tokenizer, basic_strategy_answer)
    engine = RolloutEngine(BlackjackTextSpec(seed=3), policy, [server.url], RolloutConfig())
    engine.pool.batch_frames = batch_frames
    async with engine:
        batch = await engine.run(["play"] * 4, group_size=2)
    assert batch.complete
    finished = spans.get_finished_spans()
    by_id = _by_id(finished)
    episodes = [s for s in finished if s.name == "episode"]
    assert len(episodes) == 4
    for episode in episodes:
        children = [s for s in finished if s.parent and s.parent.span_id == episode.context.span_id]
        names = [s.name for s in children]
        assert "env.reset" in names and "model.generate" in names and "env.step" in names, names
        assert all(c.context.trace_id == episode.context.trace_id for c in children)
    server_steps = [s for s in finished if s.name == "env.step" and s.kind == trace.SpanKind.SERVER]
    server_resets = [
        s for s in finished if s.name == "env.reset" and s.kind == trace.SpanKind.SERVER
    ]
    assert server_steps and len(server_resets) == 4
    if batch_frames:  # per sub-frame: each server span's parent is the client's env call
        for s in server_steps + server_resets:
            parent = by_id[s.parent.span_id]
            assert parent.kind == trace.SpanKind.INTERNAL and parent.name == s.name
            episode = by_id[parent.parent.span_id]
            assert episode.name == "episode" and episode.context.trace_id == s.context.trace_id
            assert s.attributes["openenv.env"] == "BlackjackEnvironment"
    else:  # one session per connection: the handshake's span (the first episode's) is the parent
        traces = {e.context.trace_id for e in episodes}
        assert all(s.context.trace_id in traces for s in server_steps + server_resets)


def test_an_http_request_joins_the_callers_trace(
    spans: InMemorySpanExporter, server: ServerThread
) -> None:
    import httpx

    from openenv_train.client.trace_context import current_traceparent

    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("caller") as caller:
        parent = current_traceparent()
        assert parent is not None and f"{caller.get_span_context().span_id:016x}" in parent
        reply = httpx.post(server.url + "/reset", json={"seed": 1}, headers={"traceparent": parent})
    assert reply.status_code == 200
    finished = spans.get_finished_spans()
    (http_span,) = [s for s in finished if s.name == "http POST /reset"]
    assert http_span.kind == trace.SpanKind.SERVER
    assert http_span.parent.span_id == caller.get_span_context().span_id
    assert http_span.context.trace_id == caller.get_span_context().trace_id
    assert http_span.attributes["http.status_code"] == 200
