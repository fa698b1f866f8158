"""OpenEnv's LLM clients (``openenv_train.judge.llm_client``) against a real model server on
loopback: a small FastAPI app that answers OpenAI's chat-completions and Anthropic's Messages
requests the way a model server does, through the real ``openai`` and ``anthropic`` SDKs. Then an
``LLMJudge`` scoring through it, in an env's rubric and as a TRL reward function.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi import FastAPI

from openenv_train import Tool
from openenv_train.core.rubrics import Rubric, WeightedSum
from openenv_train.judge import LLMJudge
from openenv_train.judge.llm_client import (
    AnthropicClient,
    LLMClient,
    LLMResponse,
    OpenAIClient,
    create_llm_client,
    messages_to_anthropic,
    tool_input_schema,
    tools_to_openai,
)
from openenv_train.training import make_rubric_reward

WEATHER = Tool(
    name="get_weather",
    description="Weather in a city",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)


def judge_answer(prompt: str) -> str:
    """The model's 'opinion': a capital question answered with Paris is right."""
    return "Score: 0.9" if "Paris" in prompt else "Score: 0.1"


def model_app(seen: list[dict[str, Any]], bad_arguments: bool = False) -> FastAPI:
    """A model server: tool calls while a tool is offered and unused, else judge answers."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body)
        messages = body["messages"]
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if body.get("tools") and messages[-1]["role"] != "tool":
            name = body["tools"][0]["function"]["name"]
            arguments = "{city: SF" if bad_arguments else json.dumps({"city": "SF"})
            message["tool_calls"] = [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ]
        elif messages[-1]["role"] == "tool":
            message["content"] = f"It is {json.loads(messages[-1]['content'])['sky']}"
        else:
            message["content"] = judge_answer(messages[-1]["content"])
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        }

    @app.post("/v1/messages")
    async def messages(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body)
        last = body["messages"][-1]["content"]
        if body.get("tools") and isinstance(last, str):
            tool = body["tools"][0]["name"]
            content = [
                {"type": "text", "text": "Let me check"},
                {"type": "tool_use", "id": "toolu_1", "name": tool, "input": {"city": "SF"}},
            ]
        elif isinstance(last, list):  # tool results
            content = [{"type": "text", "text": f"It is {json.loads(last[0]['content'])['sky']}"}]
        else:
            content = [{"type": "text", "text": judge_answer(last)}]
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }

    return app


@pytest.fixture
def model_server(serve_app: Any) -> tuple[Any, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    return serve_app(model_app(seen)), seen


async def test_openai_client_completes_with_its_system_prompt_and_settings(
    model_server: Any,
) -> None:
    server, seen = model_server
    client = OpenAIClient(
        "http://127.0.0.1", server.port, model="judge", system_prompt="Be strict.", max_tokens=8
    )
    assert isinstance(client, LLMClient) and client.base_url == server.url
    assert await client.complete("Capital of France? Paris") == "Score: 0.9"
    assert await client.complete("Capital of France? Rome", temperature=0.5) == "Score: 0.1"
    assert seen[0]["messages"] == [
        {"role": "system", "content": "Be strict."},
        {"role": "user", "content": "Capital of France? Paris"},
    ]
    assert (seen[0]["temperature"], seen[0]["max_tokens"], seen[1]["temperature"]) == (0.0, 8, 0.5)
    free = OpenAIClient("http://127.0.0.1", server.port, model="judge", temperature=None)
    await free.complete("Paris", top_p=0.5)  # None: the server's default; others pass through
    assert "temperature" not in seen[2] and seen[2]["top_p"] == 0.5


async def test_openai_tool_calling_round_trip_with_mcp_tools(model_server: Any) -> None:
    server, seen = model_server
    client = OpenAIClient("http://127.0.0.1", server.port, model="agent")
    history: list[dict[str, Any]] = [{"role": "user", "content": "Weather in SF?"}]
    first = await client.complete_with_tools(history, [WEATHER])
    assert isinstance(first, LLMResponse) and first.content == ""
    (call,) = first.tool_calls
    assert (call.id, call.name, call.args) == ("call_1", "get_weather", {"city": "SF"})
    assert seen[0]["tools"] == tools_to_openai([WEATHER])
    assert seen[0]["tools"][0]["function"]["parameters"]["properties"] == {
        "city": {"type": "string"}
    }
    history += [
        first.to_message_dict(),
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"sky": "sunny"})},
    ]
    second = await client.complete_with_tools(history, [WEATHER])
    assert (second.content, second.tool_calls) == ("It is sunny", [])
    assert seen[1]["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"city": "SF"}'


async def test_a_tool_call_whose_arguments_are_not_json_is_a_clear_error(serve_app: Any) -> None:
    server = serve_app(model_app([], bad_arguments=True))
    client = OpenAIClient("http://127.0.0.1", server.port, model="agent")
    with pytest.raises(ValueError, match="tool call 'get_weather': arguments must be a JSON"):
        await client.complete_with_tools([{"role": "user", "content": "hi"}], [WEATHER])


async def test_anthropic_client_speaks_the_messages_api(model_server: Any) -> None:
    server, seen = model_server
    client = AnthropicClient(
        "http://127.0.0.1", server.port, model="claude", system_prompt="Judge."
    )
    assert await client.complete("Capital of France? Paris") == "Score: 0.9"
    assert seen[0]["system"] == "Judge." and seen[0]["max_tokens"] == 256
    assert seen[0]["temperature"] == 0.0  # in the body, whatever the SDK version
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in SF?"},
    ]
    first = await client.complete_with_tools(history, [WEATHER.model_dump()])
    assert first.content == "Let me check" and first.tool_calls[0].args == {"city": "SF"}
    assert seen[1]["system"] == "Use tools."  # the conversation's system text wins
    assert seen[1]["tools"][0]["input_schema"]["properties"] == {"city": {"type": "string"}}
    history += [
        first.to_message_dict(),
        {"role": "tool", "tool_call_id": "toolu_1", "content": json.dumps({"sky": "grey"})},
    ]
    second = await client.complete_with_tools(history, [WEATHER])
    assert second.content == "It is grey"
    assert seen[2]["messages"][1]["content"][1]["type"] == "tool_use"
    assert seen[2]["messages"][2]["content"][0]["tool_use_id"] == "toolu_1"


async def test_llm_judge_scores_through_a_served_model_in_a_weighted_sum(
    model_server: Any,
) -> None:
    server, seen = model_server
    client = OpenAIClient("http://127.0.0.1", server.port, model="judge")
    judge = LLMJudge("Capital of France? {action}. Score 0-1:", client=client)

    class Short(Rubric):
        def forward(self, action: Any, observation: Any) -> float:
            return 1.0 if len(action) < 10 else 0.0

    reward = WeightedSum([judge, Short()], [0.5, 0.5])
    assert await reward("Paris", None) == pytest.approx(0.5 * 0.9 + 0.5)
    assert await judge("Rome", None) == pytest.approx(0.1)
    assert seen[-1]["messages"][-1]["content"] == "Capital of France? Rome. Score 0-1:"


def test_llm_judge_as_a_trl_reward_function_across_batches(model_server: Any) -> None:
    """Each TRL batch runs in a new event loop; the client must serve every one of them."""
    server, seen = model_server
    judge = LLMJudge(
        "{observation.question} {action}. Score 0-1:",
        client=OpenAIClient("http://127.0.0.1", server.port, model="judge"),
    )
    reward = make_rubric_reward(judge, name="judge")
    question = ["Capital of France?"] * 2
    for _ in range(3):  # three batches, three event loops
        assert reward(["Paris", "Rome"], question=question) == pytest.approx([0.9, 0.1])
    assert len(seen) == 6


def test_create_llm_client_knows_two_hosted_providers() -> None:
    client = create_llm_client("OpenAI", "gpt-4o", "sk-test", max_tokens=64)
    assert isinstance(client, OpenAIClient) and client.base_url == "https://api.openai.com:443"
    assert isinstance(create_llm_client("anthropic", "claude", "sk-ant"), AnthropicClient)
    with pytest.raises(ValueError, match="provider 'google' is not supported.*OpenAIClient"):
        create_llm_client("google", "gemini", "key")


def test_converters_leave_the_callers_data_alone_and_refuse_unknown_roles() -> None:
    schema = {"oneOf": [{"type": "string"}, {"type": "object"}]}
    assert tool_input_schema(schema) == {"type": "object", "properties": {}}
    assert schema == {"oneOf": [{"type": "string"}, {"type": "object"}]}
    parts = [{"type": "text", "text": "hi"}]
    messages = [
        {"role": "user", "content": parts},
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
    ]
    _, turns = messages_to_anthropic(messages)
    assert [b["type"] for b in turns[0]["content"]] == ["text", "tool_result"]
    assert parts == [{"type": "text", "text": "hi"}]
    with pytest.raises(ValueError, match=r"messages\[0\]: role 'narrator'"):
        messages_to_anthropic([{"role": "narrator", "content": "once upon a time"}])
