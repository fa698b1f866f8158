"""RFC 005 on our server: the notes env runs the reference ReAct agent inside; the agent's model
is our policy through the capture proxy. Real processes everywhere; none left behind."""

from __future__ import annotations

import asyncio

import psutil
import pytest
from chatml import chatml_tokenizer
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from notes_env import HarnessAction, NotesClient, NotesEnv, notes_task, scripted_answer
from processes import excluding_zygotes
from server_helpers import wait_until

from openenv_train.agents.agentic import HarnessCrashedError, HarnessNotRunningError
from openenv_train.agents.capture_proxy import CaptureProxy
from openenv_train.agents.harness_env import resolve_tool_conflicts
from openenv_train.agents.tool_bridge import ToolBridge
from openenv_train.core.errors import EnvServerError
from openenv_train.core.mcp_types import Tool
from openenv_train.rollout import ScriptedPolicy
from openenv_train.runtime import LocalProcessProvider

pytestmark = pytest.mark.timeout(120)


def _t(name: str) -> Tool:
    return Tool(name=name, description="", input_schema={"type": "object", "properties": {}})


@pytest.fixture(scope="module")
def notes_provider():
    with LocalProcessProvider("notes_env.server.app:app") as server:
        yield server


@pytest.fixture
def notes_server(notes_provider):
    return notes_provider.base_url


@pytest.fixture
def serve_provider_pid(notes_provider):
    return notes_provider.pid


async def test_agent_inside_env_solves_the_task_through_the_proxy(notes_server):
    policy = ScriptedPolicy(chatml_tokenizer(), scripted_answer)
    async with CaptureProxy(policy) as proxy:
        ep = proxy.open_episode()
        async with NotesClient(notes_server) as env:
            first = await env.reset(seed=3, llm_base_url=ep.base_url)
            assert first.observation.injected_tools == ["read_note", "multiply", "submit"]
            assert first.reward is None  # reset is not a scored turn
            task = notes_task(3)
            assert first.observation.response == task.question
            result = await env.step(HarnessAction(message=task.question))
            assert result.reward == 1.0 and result.done
            kinds = [e["type"] for e in result.observation.turn_events]
            assert kinds.count("tool_call") == 4 and kinds[-1] == "turn_complete"
            assert f"{task.answer}" in result.observation.response
        trace = proxy.close_episode(ep.episode_id)
    assert len(trace.calls) == 5 and trace.prefix_breaks == 0
    rec = trace.to_episode_record(reward=1.0)
    last = trace.calls[-1]
    assert rec.prompt_ids + rec.completion_ids == last.prompt_ids + last.completion_ids
    assert sum(rec.env_mask) == sum(len(c.completion_ids) for c in trace.calls)


async def test_a_harness_crash_is_an_error_never_a_reward(notes_server, serve_provider_pid):
    async with NotesClient(notes_server) as env:
        with pytest.raises(EnvServerError, match="HarnessNotRunningError"):
            await env.step(HarnessAction(message="before reset"))
        await env.reset(seed=1, llm_base_url="http://127.0.0.1:9/v1")
        agents = excluding_zygotes(psutil.Process(serve_provider_pid).children(recursive=True))
        assert len(agents) == 1  # this session's agent process
        agents[0].kill()
        agents[0].wait(10)
        with pytest.raises(EnvServerError, match="HarnessCrashedError") as info:
            await env.step(HarnessAction(message="what does the order cost?"))
        assert info.value.data["exception_type"] == "HarnessCrashedError"
        # the session survives: a fresh reset starts a fresh agent
        again = await env.reset(seed=2, llm_base_url="http://127.0.0.1:9/v1")
        assert again.observation.injected_tools
    # closing the session stopped the agent: nothing left behind
    server = psutil.Process(serve_provider_pid)
    await asyncio.to_thread(
        wait_until,
        lambda: not excluding_zygotes(server.children(recursive=True)),
        15,
        "agent stopped",
    )


class BrokenNotes(NotesEnv):
    BUILTIN_TOOL_NAMES = frozenset({"submit"})


async def test_in_process_env_errors_conflicts_and_bridge():
    env = NotesEnv()
    with pytest.raises(HarnessNotRunningError):
        await env.step(HarnessAction(message="x"))
    tools = [_t("read_note"), _t("submit")]
    resolved, renames = resolve_tool_conflicts(tools, frozenset({"submit"}))
    assert [t.name for t in resolved] == ["read_note", "env_submit"]
    assert renames == {"env_submit": "submit"}
    with pytest.raises(ValueError, match="taken too"):
        resolve_tool_conflicts([_t("a"), _t("env_a")], frozenset({"a"}))
    with pytest.raises(ValueError, match="reserved"):
        resolve_tool_conflicts([_t("reset")], frozenset())
    # the bridge serves this env instance's tools to an MCP SDK client, under the new names
    env.on_reset(4)
    bridge = ToolBridge(env, renames)
    url = await bridge.start()
    try:
        async with streamable_http_client(url) as s, ClientSession(s[0], s[1]) as mcp:
            await mcp.initialize()
            names = [t.name for t in (await mcp.list_tools()).tools]
            assert names == ["read_note", "multiply", "env_submit"]
            note = await mcp.call_tool("read_note", {"title": "order"})
            assert note.content[0].text == env.task.notes["order"]
            done = await mcp.call_tool("env_submit", {"answer": 12})
            assert not getattr(done, "is_error", getattr(done, "isError", None))
            assert env.submitted == 12
            missing = await mcp.call_tool("read_note", {"title": "nope"})
            assert getattr(missing, "is_error", getattr(missing, "isError", None))
            assert "no note" in missing.content[0].text
    finally:
        await bridge.stop()
    assert bridge.calls == 3


async def test_crash_in_process_raises_and_frees_the_process():
    import sys

    from openenv_train.agents.agentic import HarnessConfig, ProcessHarnessAdapter

    env = NotesEnv()
    script = "import json,sys; print(json.dumps({'type':'ready'}),flush=True); sys.stdin.readline(); sys.exit(5)"
    env.adapter = ProcessHarnessAdapter(
        HarnessConfig(name="dies", command=[sys.executable, "-c", script])
    )
    await env.reset(seed=0)
    pid = env.adapter.pid
    with pytest.raises(HarnessCrashedError, match="code 5"):
        await env.step(HarnessAction(message="go"))
    assert not psutil.pid_exists(pid) and env.bridge is None
    await env.close()
