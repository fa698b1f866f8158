"""The rollout worker of AsyncGRPOTrainer with harness sessions: MCP tool calls on a real echo
server (white-box, a scripted policy: no model server needed). Needs trl (the train extra)."""

from __future__ import annotations

import queue
import time

import pytest

pytest.importorskip("trl.experimental.async_grpo")

CALL = '<tool_call>{"name": "echo_message", "arguments": {"message": "hello world"}}</tool_call>'


def test_worker_plays_harness_sessions_into_rows(echo_url) -> None:
    from chatml import chatml_tokenizer
    from echo_env import EchoEnv

    from openenv_train.harness import HarnessRunner, MCPEnvSession, MCPHarnessAdapter
    from openenv_train.rollout import RolloutConfig, ScriptedPolicy
    from openenv_train.training.async_grpo import EngineRolloutWorker

    tok = chatml_tokenizer()

    def session(prompt):
        return MCPEnvSession.open(
            EchoEnv(echo_url),
            task=prompt,
            initial_messages_builder=lambda result, task: [{"role": "user", "content": task}],
        )

    worker = EngineRolloutWorker(
        lambda: ScriptedPolicy(tok, lambda text: "done" if "<|im_start|>tool" in text else CALL),
        lambda policy: HarnessRunner(
            session_factory=session,
            harness_adapter=MCPHarnessAdapter(),
            policy=policy,
            config=RolloutConfig(max_turns=4, max_new_tokens=128),
        ),
        num_generations=2,
        prompts=["call the echo tool"],
        max_queued_rows=4,
    )
    worker.update_model_version(7)
    worker.start()
    rows = []
    try:
        deadline = time.monotonic() + 60
        while len(rows) < 4:
            assert time.monotonic() < deadline, "the harness worker produced no rows"
            try:
                rows.append(worker.rollout_buffer.get(timeout=1))
            except queue.Empty:
                worker.check_health(stale_after_s=60)
    finally:
        worker.stop()
    for row in rows:
        assert row.model_version == 7 and row.metrics["reward"] == pytest.approx(1.1)
        mask = row.completion_mask.tolist()
        first = mask.index(1)
        runs = [m for i, m in enumerate(mask[first:]) if i == 0 or m != mask[first + i - 1]]
        assert runs == [1, 0, 1]  # the tool call, the tool's answer (masked out), "done"
        assert "echo_message" in tok.decode(row.input_ids[first:].tolist())
    assert worker.stats["groups"] >= 2 and worker.stats["groups_dropped"] == 0
