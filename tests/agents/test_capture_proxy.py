"""The capture proxy: the real ``openai`` client library against it, traces checked token by token."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest
from chatml import chatml_tokenizer

from openenv_train.agents.capture import TraceError
from openenv_train.agents.capture_proxy import CaptureProxy
from openenv_train.rollout import ScriptedPolicy
from openenv_train.rollout.records import validate_rollout_output

pytestmark = pytest.mark.timeout(60)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "echo_message",
            "description": "Echo a message",
            "parameters": {"type": "object", "properties": {"message": {"type": "string"}}},
        },
    }
]
CALL = '<tool_call>{"name": "echo_message", "arguments": {"message": "hello"}}</tool_call>'


def respond(prompt: str) -> str:
    """Call the tool once, then answer with what it said."""
    return "the tool answered hello" if "<|im_start|>tool" in prompt else CALL


@pytest.fixture(scope="module")
def tokenizer():
    return chatml_tokenizer()


@pytest.fixture
async def proxy(tokenizer):
    async with CaptureProxy(ScriptedPolicy(tokenizer, respond), max_wait_s=1.0) as p:
        yield p


def client(ep) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=ep.base_url, api_key="unused", max_retries=0)


async def two_turns(ep, *, stream: bool = False) -> list:
    """A tool call, its result, the final answer: the loop every ReAct harness runs."""
    messages = [{"role": "user", "content": "call the echo tool with a message"}]
    oa = client(ep)
    first = await oa.chat.completions.create(model="policy", messages=messages, tools=TOOLS)
    msg = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    call = msg.tool_calls[0]
    assert call.function.name == "echo_message"
    assert json.loads(call.function.arguments) == {"message": "hello"}
    messages.append(msg.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "hello"})
    if stream:
        chunks = await oa.chat.completions.create(
            model="policy",
            messages=messages,
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
        text, finish, usage = "", None, None
        async for chunk in chunks:
            if chunk.usage:
                usage = chunk.usage
            for choice in chunk.choices:
                text += choice.delta.content or ""
                finish = choice.finish_reason or finish
        assert finish == "stop" and usage.completion_tokens > 0
    else:
        second = await oa.chat.completions.create(model="policy", messages=messages, tools=TOOLS)
        text = second.choices[0].message.content
    await oa.close()
    assert text == "the tool answered hello"
    return messages


@pytest.mark.parametrize("stream", [False, True])
async def test_multi_turn_trace_is_token_exact(proxy, tokenizer, stream):
    ep = proxy.open_episode()
    await two_turns(ep, stream=stream)
    trace = proxy.close_episode(ep.episode_id)
    first, second = trace.calls
    assert second.prefix_consistent and trace.prefix_breaks == 0
    # the second prompt is exactly what the model saw before plus the tool turn
    assert second.prompt_ids[: len(first.prompt_ids) + len(first.completion_ids)] == (
        first.prompt_ids + first.completion_ids
    )
    rec = trace.to_episode_record(reward=1.0)
    assert rec.prompt_ids == first.prompt_ids
    assert rec.prompt_ids + rec.completion_ids == second.prompt_ids + second.completion_ids
    model = [t for t, m in zip(rec.completion_ids, rec.env_mask, strict=True) if m]
    assert model == first.completion_ids + second.completion_ids
    env = tokenizer.decode(
        [t for t, m in zip(rec.completion_ids, rec.env_mask, strict=True) if not m]
    )
    assert "<|im_start|>tool\nhello<|im_end|>" in env and env.endswith("<|im_start|>assistant\n")
    assert len(rec.logprobs) == len(rec.completion_ids)
    rows = trace.to_trl_rows()
    validate_rollout_output({k: [r[k] for r in rows] for k in rows[0]}, 1)


async def test_openenv_training_trace_export_validates(proxy):
    from openenv.core.harness.training import TrainingTrace

    ep = proxy.open_episode("ep-export")
    await two_turns(ep)
    trace = proxy.close_episode(ep.episode_id)
    validated = TrainingTrace.model_validate(trace.to_training_trace())
    assert [t.node_id for t in validated.turns] == ["ep-export:0", "ep-export:1"]
    turn = validated.turns[1]
    assert turn.loss_mask == [0] * len(turn.prompt_token_ids) + [1] * len(turn.completion_token_ids)


async def test_rewritten_history_is_a_recorded_break_not_a_stitched_row(proxy):
    ep = proxy.open_episode()
    messages = await two_turns(ep)
    oa = client(ep)
    rewritten = [{"role": "user", "content": "a summary of the conversation"}, messages[-1]]
    await oa.chat.completions.create(model="policy", messages=rewritten)
    await oa.close()
    trace = proxy.close_episode(ep.episode_id)
    assert trace.prefix_breaks == 1 and not trace.calls[2].prefix_consistent
    with pytest.raises(TraceError, match="rewrote its history at call 2"):
        trace.to_episode_record(reward=0.0)
    rows = trace.to_trl_rows(per_call=True)
    assert len(rows) == 3 and all(r["env_mask"] == [1] * len(r["completion_ids"]) for r in rows)


async def test_malformed_requests_get_openai_errors_and_the_episode_goes_on(proxy):
    ep = proxy.open_episode()
    oa = client(ep)
    with pytest.raises(openai.BadRequestError) as info:
        await oa.chat.completions.create(
            model="policy", messages=[{"role": "user", "content": "x"}], temperature=7
        )
    assert (
        info.value.body["param"] == "temperature"
        and info.value.body["type"] == "invalid_request_error"
    )
    with pytest.raises(openai.BadRequestError, match="messages"):
        await oa.chat.completions.create(model="policy", messages=[])
    with pytest.raises(openai.BadRequestError, match="role"):
        await oa.chat.completions.create(
            model="policy", messages=[{"role": "robot", "content": "x"}]
        )
    await oa.close()
    await two_turns(ep)  # the same episode still works
    trace = proxy.close_episode(ep.episode_id)
    assert trace.request_errors == 3 and len(trace.calls) == 2 and trace.prefix_breaks == 0
    with pytest.raises(openai.NotFoundError, match="no open episode"):
        await client(ep).chat.completions.create(
            model="policy", messages=[{"role": "user", "content": "x"}]
        )


async def test_text_completions_endpoint_keeps_the_chain(proxy, tokenizer):
    ep = proxy.open_episode()
    oa = client(ep)
    first = await oa.completions.create(
        model="policy", prompt="player 15 soft", max_tokens=64, logprobs=1
    )
    assert first.choices[0].text == CALL and first.choices[0].logprobs.token_logprobs
    prompt = "player 15 soft" + first.choices[0].text + " the tool answered"
    chunks = await oa.completions.create(model="policy", prompt=prompt, max_tokens=64, stream=True)
    streamed = "".join([c.choices[0].text async for c in chunks if c.choices])
    assert streamed == CALL
    await oa.close()
    trace = proxy.close_episode(ep.episode_id)
    assert trace.calls[1].prefix_consistent
    rec = trace.to_episode_record(reward=0.5)
    seen = tokenizer.decode(rec.prompt_ids + rec.completion_ids, skip_special_tokens=True)
    assert seen.startswith(prompt)  # the model's own EOS stays in the chain, as it was sampled


async def test_concurrent_harnesses_share_one_batched_generate(tokenizer):
    policy = ScriptedPolicy(tokenizer, respond)
    async with CaptureProxy(policy, max_wait_s=5.0) as proxy:
        episodes = [proxy.open_episode() for _ in range(8)]
        await asyncio.gather(*(two_turns(ep) for ep in episodes))
        traces = [proxy.close_episode(ep.episode_id) for ep in episodes]
    assert all(len(t.calls) == 2 and t.prefix_breaks == 0 for t in traces)
    assert proxy.batcher.stats.max_batch == 8  # all eight first calls ran as one batch
    assert policy.calls < 16
