"""White-box MCP tool calling through make_harness_rollout_func, against real env servers."""

from __future__ import annotations

import asyncio
import json

import pytest
from blackjack_env import BlackjackAction, BlackjackEnv
from blackjack_env.game import basic_strategy
from blackjack_env.text_spec import decision_text
from echo_env import EchoEnv

from openenv_train.core.mcp_types import Tool
from openenv_train.harness import (
    HarnessAdapter,
    MCPEnvSession,
    MCPHarnessAdapter,
    StepEnvSessionAdapter,
    VerifyResult,
    parse_tool_calls,
)
from openenv_train.rollout import (
    GroupsDroppedError,
    RolloutConfig,
    RolloutOutputError,
    ScriptedPolicy,
)
from openenv_train.training import make_harness_rollout_func

CALL = '<tool_call>{"name": "echo_message", "arguments": {"message": "hello world"}}</tool_call>'


def echo_factory(url, verifier=None):
    def factory(prompt):
        return MCPEnvSession.open(
            EchoEnv(url, mode="simulation"),  # tool calls as steps on /ws (the training transport)
            task=prompt,
            initial_messages_builder=lambda result, task: [{"role": "user", "content": task}],
            verifier=verifier,
        )

    return factory


def call_then_done(tok):
    """Calls the echo tool, then answers "done" once the tool's reply is in the context."""
    return ScriptedPolicy(tok, lambda text: "done" if "<|im_start|>tool" in text else CALL)


def echo_tool_rollout(factory, policy):
    """Groups of 2, up to 4 turns; a batch flushes only when every session waits on the model
    (max_wait_s=60), so the batches are deterministic."""
    return make_harness_rollout_func(
        session_factory=factory,
        harness_adapter=MCPHarnessAdapter(),
        policy=policy,
        config=RolloutConfig(max_turns=4, max_new_tokens=128, max_wait_s=60.0),
        group_size=2,
    )


def segments(ids, mask):
    runs, start = [], 0
    for i in range(1, len(mask) + 1):
        if i == len(mask) or mask[i] != mask[start]:
            runs.append((mask[start], ids[start:i]))
            start = i
    return runs


def test_echo_tool_calls_are_executed_and_appended_as_tool_messages(echo_url, chat_tokenizer):
    tok = chat_tokenizer
    policy = call_then_done(tok)
    func = echo_tool_rollout(echo_factory(echo_url), policy)
    try:
        out = func(["call the echo tool"] * 4, None)
        first = func.last_batch
        func(["call the echo tool"] * 4, None)
    finally:
        func.close()
    assert len(out["completion_ids"]) == 4
    assert (
        out["env_reward"] == [pytest.approx(1.1)] * 4
    )  # the env's own reward: len("hello world") / 10
    assert policy.calls == 4  # 4 sessions x 2 turns, batched into one call per turn, twice
    for batch in (first, func.last_batch):  # per run, as the engine counts them
        assert batch.metrics["policy_calls"] == 2 and batch.metrics["mean_batch_size"] == 4
    # the episode metrics every runner reports, with the engine's names and meanings
    m = out["episode_metrics"][0]
    assert m["turns"] == 2 and m["stop_reason"] == "no_tool_call" and m["truncated"] == 0
    assert m["model_tokens"] + m["env_tokens"] == len(out["completion_ids"][0])
    for prompt_ids, ids, mask, metrics in zip(
        out["prompt_ids"],
        out["completion_ids"],
        out["env_mask"],
        out["episode_metrics"],
        strict=True,
    ):
        runs = segments(ids, mask)
        assert [m for m, _ in runs] == [1, 0, 1]
        assert tok.decode(runs[0][1]) == CALL + "<|im_end|>"
        assert (
            tok.decode(runs[1][1])
            == "\n<|im_start|>tool echo_message\nhello world<|im_end|>\n<|im_start|>assistant\n"
        )
        assert tok.decode(runs[2][1]) == "done<|im_end|>"
        assert metrics["stop_reason"] == "no_tool_call" and metrics["tool_calls"] == 1
        # the whole record is the chat template's rendering of the conversation, tools included
        messages = [
            {"role": "user", "content": "call the echo tool"},
            {"role": "assistant", "content": CALL},
            {"role": "tool", "name": "echo_message", "content": "hello world"},
            {"role": "assistant", "content": "done"},
        ]
        rendered = tok.decode(prompt_ids + ids)
        tools = json.loads(rendered.split("Tools: ", 1)[1].split("<|im_end|>", 1)[0])
        assert [t["function"]["name"] for t in tools] == ["echo_message", "echo_with_length"]
        assert tools[0]["function"]["parameters"]["properties"]["message"]["type"] == "string"
        expected = tok.apply_chat_template(messages, tokenize=False, tools=tools)
        assert (
            rendered + "\n" == expected
        )  # the template's newline after the final EOS is not generated


def test_a_session_still_opening_joins_the_first_batch(echo_url, chat_tokenizer):
    """One session opens 0.5 s after the others: the first turn waits for it (max_wait_s allows)
    instead of flushing three prompts and then one."""
    opened = []

    async def factory(prompt):
        opened.append(prompt)
        if len(opened) == 4:
            await asyncio.sleep(0.5)
        return await echo_factory(echo_url)(prompt)

    func = echo_tool_rollout(factory, call_then_done(chat_tokenizer))
    try:
        out = func(["call the echo tool"] * 4, None)
    finally:
        func.close()
    assert out["env_reward"] == [pytest.approx(1.1)] * 4
    assert func.last_batch.metrics["policy_calls"] == 2  # one call per turn, all four sessions
    assert func.last_batch.metrics["mean_batch_size"] == 4


def test_tool_errors_are_fed_back_and_limits_stop_the_loop(echo_url, chat_tokenizer):
    tok = chat_tokenizer
    bad_calls = [
        '<tool_call>{"name": "nope", "arguments": {}}</tool_call>',
        "<tool_call>{oops</tool_call>",
    ]

    def run(verifier):
        answers = iter(bad_calls * 10)
        func = make_harness_rollout_func(
            session_factory=echo_factory(echo_url, verifier),
            harness_adapter=MCPHarnessAdapter(),
            policy=ScriptedPolicy(tok, lambda text: next(answers)),
            config=RolloutConfig(
                max_turns=2, max_new_tokens=64, max_episode_retries=0, group_retries=0
            ),
            group_size=1,
        )
        try:
            return func(["x"], None)
        finally:
            func.close()

    # the env never scored this episode (no tool reached it): no reward is invented, the group drops
    with pytest.raises(GroupsDroppedError, match="MissingRewardError"):
        run(None)
    out = run(lambda transcript, session: VerifyResult(env_reward=-0.5, metrics={"verified": 1}))
    ids, mask = out["completion_ids"][0], out["env_mask"][0]
    text = tok.decode(ids)
    assert (
        "error: unknown tool 'nope'; available tools: ['echo_message', 'echo_with_length']" in text
    )
    assert (
        mask[-1] == 1
    )  # stopped by max_turns right after a model turn: the 2nd error is not in the tokens
    assert "not valid JSON" not in text
    m = out["episode_metrics"][0]
    assert (
        m["stop_reason"] == "limit"
        and m["turns"] == 2
        and m["tool_errors"] == 2
        and m["verified"] == 1
    )
    assert out["env_reward"] == [-0.5]


def test_parse_tool_calls_formats():
    (call,) = parse_tool_calls(
        'x <tool_call>{"name": "a", "arguments": "{\\"k\\": 1}"}</tool_call>'
    )
    assert (call.name, call.arguments, call.error) == ("a", {"k": 1}, None)
    (bad,) = parse_tool_calls("<tool_call>[1]</tool_call>")
    assert "needs" in bad.error
    assert parse_tool_calls("no calls here") == []


def test_step_env_adapter_plays_blackjack_through_a_tool(blackjack_url, chat_tokenizer):
    tok = chat_tokenizer
    play = Tool(
        name="play",
        description="hit or stand",
        input_schema={"type": "object", "properties": {"action": {"type": "string"}}},
    )

    def factory(prompt):
        return StepEnvSessionAdapter.open(
            BlackjackEnv(blackjack_url),
            tools=[play],
            action_builder=lambda name, args: BlackjackAction(action=args["action"]),
            initial_messages_builder=lambda r, task: [
                {"role": "user", "content": decision_text(r.observation)}
            ],
            observation_text=lambda r: decision_text(r.observation),
        )

    def respond(text):
        last = text.rsplit("player ", 1)[1].split()
        action = basic_strategy(int(last[0]), last[1] == "soft", last[3])
        name = "hit" if action == 0 else "stand"
        return '<tool_call>{"name": "play", "arguments": {"action": "' + name + '"}}</tool_call>'

    policy = ScriptedPolicy(tok, respond)
    func = make_harness_rollout_func(
        session_factory=factory,
        harness_adapter=MCPHarnessAdapter(),
        policy=policy,
        config=RolloutConfig(max_turns=12, max_new_tokens=64),
        group_size=4,
    )
    try:
        out = func(["play"] * 16, None)
    finally:
        func.close()
    assert set(out["env_reward"]) <= {-1.0, 0.0, 1.0}
    for m in out["episode_metrics"]:
        assert m["stop_reason"] == "done"  # every game ran to its end through the tool
    assert any(m["turns"] > 1 for m in out["episode_metrics"])


class BrokenMaskAdapter(HarnessAdapter):
    """A (buggy) real adapter whose env_mask is one entry short: the rollout_func must say so."""

    async def run_white_box(self, model_step, session, config):
        result = await MCPHarnessAdapter().run_white_box(model_step, session, config)
        result.env_mask = result.env_mask[:-1]
        return result


def test_rollout_func_validates_its_output(echo_url, chat_tokenizer):
    policy = ScriptedPolicy(
        chat_tokenizer, lambda text: "done" if "<|im_start|>tool" in text else CALL
    )
    func = make_harness_rollout_func(
        session_factory=echo_factory(echo_url),
        harness_adapter=BrokenMaskAdapter(),
        policy=policy,
        group_size=1,
    )
    try:
        with pytest.raises(
            RolloutOutputError,
            match=r"output\['env_mask'\]\[0\] has \d+ entries but completion_ids\[0\] has",
        ):
            func(["x"], None)
    finally:
        func.close()


def test_make_harness_rollout_func_argument_errors(echo_url, chat_tokenizer):
    policy = ScriptedPolicy(chat_tokenizer, lambda text: CALL)
    with pytest.raises(ValueError, match="not both"):
        make_harness_rollout_func(
            session_factory=echo_factory(echo_url),
            harness_adapter=MCPHarnessAdapter(),
            policy=policy,
            model_step=object(),
        )
    # no policy: it samples the trainer's model, so a call without a trainer says what is missing
    func = make_harness_rollout_func(
        session_factory=echo_factory(echo_url), harness_adapter=MCPHarnessAdapter(), group_size=1
    )
    try:
        with pytest.raises(ValueError, match="no processing_class"):
            func(["x"], None)
    finally:
        func.close()
    with pytest.raises(ValueError, match="RolloutConfig.max_turns must be >= 1"):
        RolloutConfig(max_turns=0)
