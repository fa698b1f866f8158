"""OpenAICompatiblePolicy against a real HTTP server on loopback serving the tiny model."""

from __future__ import annotations

import pytest
from policy_completions_app import ServerThread, build_app
from ports import held_port

from openenv_train.core.errors import InfrastructureError
from openenv_train.policy import OpenAICompatiblePolicy, SamplingSettings, TransformersPolicy


@pytest.fixture()
def served(tiny_pair):
    model, tok = tiny_pair
    backend = TransformersPolicy(model, tok)
    app = build_app(backend, "tiny")
    with ServerThread(app) as server:
        yield server, app, backend


def prompts_for(tok):
    return [
        tok.encode("player 15 soft dealer A action:"),
        tok.encode("player 9 hard dealer 10 action: hit<eos> player 19 hard dealer 10 action:"),
        tok.encode("player 20 hard dealer 6 action:"),
    ]


async def test_one_request_per_batch_matches_local_backend(served, tiny_pair):
    server, app, backend = served
    _, tok = tiny_pair
    policy = OpenAICompatiblePolicy(server.base_url + "/v1", "tiny", tokenizer=tok)
    prompts = prompts_for(tok)
    sampling = SamplingSettings(max_new_tokens=4, temperature=0)
    try:
        remote = await policy.generate(prompts, sampling)
    finally:
        await policy.aclose()
    local = await backend.generate(prompts, sampling)
    assert len(app.state.requests) == 1  # the whole batch in one request
    sent = app.state.requests[0]
    assert sent["prompt"] == prompts and sent["logprobs"] == 1 and sent["return_token_ids"]
    for r, loc in zip(remote, local, strict=True):  # server reversed choices: matched back by index
        assert r.token_ids == loc.token_ids
        assert r.logprobs == pytest.approx(loc.logprobs, abs=1e-6)
        assert (r.text, r.finish_reason) == (loc.text, loc.finish_reason)


async def test_request_body_fields(tiny_pair):
    _, tok = tiny_pair
    policy = OpenAICompatiblePolicy("http://127.0.0.1:1", "m", tokenizer=tok)
    s = SamplingSettings(max_new_tokens=3, temperature=0.5, top_k=4, stop_token_ids=(7,), seed=9)
    body = policy.request_body([[3, 4], [5]], s)
    assert body["top_k"] == 4 and body["stop_token_ids"] == [7] and body["max_tokens"] == 3
    assert "seed" not in body  # one seed for many prompts would make group members identical
    assert policy.request_body([[3]], s)["seed"] == 9
    await policy.aclose()


async def test_server_rejection_and_unreachable(served, tiny_pair):
    server, _, _ = served
    _, tok = tiny_pair
    wrong_model = OpenAICompatiblePolicy(server.base_url, "nope", tokenizer=tok)
    with pytest.raises(ValueError, match="404"):
        await wrong_model.generate([[3]], SamplingSettings(max_new_tokens=1))
    await wrong_model.aclose()
    with held_port() as dead_port:  # held, not listening: connections are refused
        dead = OpenAICompatiblePolicy(f"http://127.0.0.1:{dead_port}", "tiny", tokenizer=tok)
        with pytest.raises(InfrastructureError, match="unreachable"):
            await dead.generate([[3]], SamplingSettings(max_new_tokens=1))
        await dead.aclose()


def test_parse_response_checks_shape(tiny_pair):
    _, tok = tiny_pair
    policy = OpenAICompatiblePolicy("http://127.0.0.1:1", "m", tokenizer=tok)
    s = SamplingSettings()
    with pytest.raises(InfrastructureError, match="expected 2 choices"):
        policy.parse_response({"choices": [{}]}, 2, s)
    with pytest.raises(InfrastructureError, match="token_ids"):
        policy.parse_response({"choices": [{"index": 0, "text": "x"}]}, 1, s)
    eos = tok.eos_token_id
    [gen] = policy.parse_response(
        {
            "choices": [
                {
                    "index": 0,
                    "token_ids": [8, eos, 9],
                    "logprobs": {"token_logprobs": [-1.0, -0.5, -2.0]},
                }
            ]
        },
        1,
        s,
    )
    assert (gen.token_ids, gen.logprobs, gen.text, gen.finish_reason) == (
        [8, eos],
        [-1.0, -0.5],
        "hit",
        "stop",
    )
