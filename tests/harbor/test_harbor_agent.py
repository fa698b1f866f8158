"""An agent program inside the harbor env (RFC 005): the reference ReAct agent solves Harbor
tasks with the container's tools; its model calls go through the capture proxy, so each record
is exactly the tokens the policy saw and sampled, and the task's tests give the reward."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from harbor_env import TaskRuntime
from harbor_env.family import WORDS, write_family
from harbor_support import BASE_IMAGE, containers_owned_by

from openenv_train.agents import AgentRunner
from openenv_train.agents.react_agent import SYSTEM
from openenv_train.policy.tiny import build_chatml_tokenizer
from openenv_train.rollout import ScriptedPolicy
from openenv_train.runtime import LocalProcessProvider

pytestmark = [pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def agent_url(tmp_path_factory) -> Iterator[str]:
    folder = write_family(tmp_path_factory.mktemp("family"))
    TaskRuntime(folder, base_image=BASE_IMAGE).build_all()
    env = {"HARBOR_TASKS": str(folder), "HARBOR_BASE_IMAGE": BASE_IMAGE, "HARBOR_WARM": "1"}
    server = LocalProcessProvider(
        "harbor_env.server.agent_app:app", env=env, startup_timeout=120, stop_timeout=60
    )
    with server:
        pid = server.pid
        yield server.base_url
    assert containers_owned_by(pid) == []


def solver(prompt: str) -> str:
    """Writes the file the task names (the last instruction in the context), then stops."""
    if "wrote 2 bytes" in prompt.rsplit("create the file", 1)[-1]:
        return "done"
    word = re.findall(r"create the file (\w+)", prompt)[-1]
    call = {"name": "write_file", "arguments": {"path": word, "content": "ok"}}
    return f"<tool_call>{json.dumps(call)}</tool_call>"


async def test_agent_inside_the_env_solves_tasks_with_token_exact_records(agent_url) -> None:
    texts = [SYSTEM, "done", *(solver(f"create the file {w}") for w in WORDS)]
    texts += [f"wrote 2 bytes to {w}" for w in WORDS]
    tok = build_chatml_tokenizer(texts)
    async with AgentRunner(ScriptedPolicy(tok, solver), [agent_url]) as runner:
        batch = await runner.run([str(s) for s in range(len(WORDS))])
        traces = runner.last_traces
    assert batch.complete and [r.reward for r in batch.records] == [1.0] * len(WORDS)
    for rec, trace in zip(batch.records, traces, strict=True):
        assert len(trace.calls) == 2  # the tool call, then "done"
        last = trace.calls[-1]  # the record is exactly what the policy saw and sampled
        assert rec.prompt_ids + rec.completion_ids == last.prompt_ids + last.completion_ids
        assert sum(rec.env_mask) == sum(len(c.completion_ids) for c in trace.calls)
