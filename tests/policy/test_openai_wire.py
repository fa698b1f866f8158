"""The one OpenAI wire module: what the client sends parses back to the same sampling on our
servers, tool calls survive a round trip, and a finished reply replays as OpenAI's stream."""

from __future__ import annotations

import json

import pytest

from openenv_train.core.errors import InfrastructureError
from openenv_train.policy import SamplingSettings
from openenv_train.policy.openai_wire import (
    ChatRequest,
    CompletionRequest,
    OpenAIRequestError,
    assistant_message,
    chat_response,
    completion_body,
    completion_choice,
    completion_response,
    finish_reason,
    message_key,
    parse_request,
    read_completion_choices,
    stream_chunks,
    usage,
)


def test_one_model_takes_text_and_token_id_prompts() -> None:
    ids = parse_request(CompletionRequest, {"prompt": [[1, 2], [3]], "max_tokens": 4})
    assert ids.token_prompts() == [[1, 2], [3]]
    text = parse_request(CompletionRequest, {"prompt": ["hi"]})
    assert text.text_prompt() == "hi"
    with pytest.raises(OpenAIRequestError, match="prompt: send token-id lists") as info:
        text.token_prompts()
    assert info.value.body()["error"]["param"] == "prompt"
    with pytest.raises(OpenAIRequestError, match="prompt: send one prompt per call"):
        ids.text_prompt()
    with pytest.raises(OpenAIRequestError, match="prompt: send text"):
        parse_request(CompletionRequest, {"prompt": [[1, 2]]}).text_prompt()
    with pytest.raises(OpenAIRequestError, match="temperature") as bad:
        parse_request(ChatRequest, {"messages": [{"role": "user"}], "temperature": 7})
    assert bad.value.param == "temperature"


def test_sampling_takes_the_servers_defaults_and_cap() -> None:
    chat = parse_request(ChatRequest, {"messages": [{"role": "user", "content": "x"}]})
    assert chat.sampling(limit=64, temperature=0.5).max_new_tokens == 64
    assert chat.sampling(limit=64, temperature=0.5).temperature == 0.5
    asked = parse_request(
        CompletionRequest,
        {"prompt": [[1]], "max_tokens": 500, "top_k": 3, "stop_token_ids": [2], "seed": 9},
    )
    s = asked.sampling(limit=64)
    assert (s.max_new_tokens, s.top_k, s.stop_token_ids, s.seed) == (64, 3, (2,), 9)
    assert asked.sampling() == SamplingSettings(500, 1.0, 1.0, 3, (2,), 9)


def test_the_client_body_parses_back_to_the_same_sampling() -> None:
    s = SamplingSettings(max_new_tokens=3, temperature=0.5, top_k=4, stop_token_ids=(7,), seed=9)
    one = parse_request(CompletionRequest, json.dumps(completion_body("m", [[3, 4]], s)))
    assert one.sampling() == s and one.token_prompts() == [[3, 4]] and one.return_token_ids
    many = parse_request(CompletionRequest, completion_body("m", [[3], [3]], s).copy())
    assert many.sampling().seed is None  # one seed for a group would make its members alike


def test_read_completion_choices_orders_by_index_and_checks_logprobs() -> None:
    choices = [
        completion_choice(1, "b", "length", logprobs=[None], token_ids=[6]),
        completion_choice(0, "a", "stop", logprobs=[-0.5, -1.0], token_ids=[4, 5]),
    ]
    first, second = read_completion_choices(completion_response("m", choices, usage(2, 3)), 2)
    assert (first.token_ids, first.logprobs, first.text) == ([4, 5], [-0.5, -1.0], "a")
    assert second.logprobs == [float("-inf")] and second.finish_reason == "length"
    with pytest.raises(InfrastructureError, match="choice 0 has 1 token ids but logprobs missing"):
        read_completion_choices({"choices": [completion_choice(0, "a", "stop", token_ids=[4])]}, 1)
    with pytest.raises(InfrastructureError, match="duplicate choice index 0"):
        read_completion_choices({"choices": [choices[1], choices[1]]}, 2)


def test_tool_calls_round_trip_and_stream() -> None:
    msg = assistant_message("", [("echo", {"message": "hi"})], "call_x")
    assert msg["content"] is None and msg["tool_calls"][0]["id"] == "call_x_0"
    assert json.loads(msg["tool_calls"][0]["function"]["arguments"]) == {"message": "hi"}
    sent_back = parse_request(ChatRequest, {"messages": [msg]}).messages[0]
    assert message_key(sent_back) == message_key(msg)  # arguments compared as JSON, not text
    finish = finish_reason("stop", tool_calls=True)
    reply = chat_response("policy", msg, finish, usage(5, 2), logprobs=[-1.0], tokens=["x"])
    assert reply["choices"][0]["logprobs"]["content"][0]["bytes"] == [ord("x")]
    events = stream_chunks(reply, include_usage=True)
    assert events[-1] == "data: [DONE]\n\n"
    chunks = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    assert chunks[1]["choices"][0]["delta"]["tool_calls"][0]["index"] == 0
    assert chunks[2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[3]["choices"] == [] and chunks[3]["usage"]["total_tokens"] == 7
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
