"""ProcessHarnessAdapter's lifecycle and typed errors, with real child processes."""

from __future__ import annotations

import contextlib
import sys

import psutil
import pytest
from processes import is_zygote

from openenv_train.agents.agentic import (
    HarnessConfig,
    HarnessCrashedError,
    HarnessEventType,
    HarnessNotRunningError,
    HarnessStartupError,
    HarnessTurnTimeoutError,
    ProcessHarnessAdapter,
    python_command,
)
from openenv_train.core.errors import InfrastructureError

pytestmark = pytest.mark.timeout(60)

ECHO = r"""
import json, sys
print(json.dumps({"type": "ready"}), flush=True)
for line in sys.stdin:
    msg = json.loads(line)["content"]
    if msg == "die":
        sys.exit(7)
    if msg == "hang":
        import time; time.sleep(60)
    if msg == "junk":
        print("not json", flush=True)
        continue
    print(json.dumps({"type": "text_output", "data": {"text": msg}}), flush=True)
    print(json.dumps({"type": "turn_complete", "data": {"response": msg.upper(), "done": msg == "bye"}}), flush=True)
"""


@pytest.fixture(params=["fresh", "forked"])
def adapter(request, tmp_path):
    """A program given as ``python -c`` (a fresh interpreter each start), or as ``python -m`` with
    ``preload`` (forked from this process's zygote for it): the adapter behaves the same."""

    def make(script: str, **cfg) -> ProcessHarnessAdapter:
        if request.param == "fresh":
            command = [sys.executable, "-c", script]
        else:
            (tmp_path / "harness_prog.py").write_text(script)
            command = python_command("harness_prog")
            cfg |= {"working_directory": str(tmp_path), "preload": ("json",)}
        return ProcessHarnessAdapter(HarnessConfig(name="t", command=command, **cfg))

    make.forked = request.param == "forked"  # type: ignore[attr-defined]
    return make


async def test_turns_events_and_idempotent_stop(adapter):
    a = adapter(ECHO)
    await a.start()
    pid = a.pid
    assert await a.is_alive()
    assert is_zygote(psutil.Process(pid).parent()) == adapter.forked
    events = [e async for e in a.send_message_streaming("hi")]
    assert [e.type for e in events] == [
        HarnessEventType.TEXT_OUTPUT,
        HarnessEventType.TURN_COMPLETE,
    ]
    reply = await a.send_message("bye")
    assert reply.response == "BYE" and reply.done and len(reply.events) == 2
    await a.stop()
    await a.stop()  # idempotent
    assert not await a.is_alive() and not psutil.pid_exists(pid)
    with pytest.raises(HarnessNotRunningError, match="reset"):
        await a.send_message("hi")


@pytest.mark.parametrize(
    ("script", "match"),
    [
        ("import sys; sys.exit(3)", "exited during startup"),
        ("print('hello', flush=True)", "not a JSON event"),
        (
            "import json; print(json.dumps({'type': 'busy'}), flush=True); import time; time.sleep(30)",
            "first line must be",
        ),
        ("import time; time.sleep(30)", "did not report ready within 0.5s"),
    ],
)
async def test_startup_errors_are_typed(adapter, script, match):
    a = adapter(script, startup_timeout_s=0.5)
    with pytest.raises(HarnessStartupError, match=match) as info:
        await a.start()
    assert isinstance(info.value, InfrastructureError)  # never a reward
    assert not await a.is_alive()


async def test_turn_timeout_crash_and_protocol_errors(adapter):
    a = adapter(ECHO)
    await a.start()
    pid = a.pid
    with pytest.raises(HarnessTurnTimeoutError, match="0.3s"):
        await a.send_message("hang", timeout_s=0.3)
    await a.stop()
    assert not psutil.pid_exists(pid)
    await a.start()
    with pytest.raises(HarnessCrashedError, match="exited with code 7"):
        await a.send_message("die")
    await a.stop()
    await a.start()
    with pytest.raises(HarnessCrashedError, match="not a JSON event"):
        await a.send_message("junk")
    await a.stop()


async def test_a_start_cancelled_anywhere_leaves_no_program(adapter, monkeypatch):
    """Cancelled at any point of ``start`` (a reset's deadline), the program is stopped; a forked
    one whose fork was still under way in its thread is killed once it is done, its pipes closed
    (a slowed-down fork puts the cancel there for sure)."""
    import asyncio
    import time

    from processes import excluding_zygotes
    from server_helpers import wait_until

    from openenv_train.runtime.zygote import Zygote

    warm = adapter(ECHO)
    await warm.start()  # the zygote is up: the cancels below land in the start itself
    await warm.stop()
    run = Zygote.run

    forks = {"started": 0, "done": 0}

    def slow_run(*args, **kwargs):
        forks["started"] += 1
        time.sleep(0.3)
        try:
            return run(*args, **kwargs)
        finally:
            forks["done"] += 1

    monkeypatch.setattr(Zygote, "run", slow_run)
    before = {p.pid for p in psutil.Process().children(recursive=True)}  # other tests' servers
    for delay in (0.0, 0.01, 0.1, 0.5):
        a = adapter(ECHO)
        task = asyncio.ensure_future(a.start())
        await asyncio.sleep(delay)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await a.stop()

        def none_left() -> bool:  # once every fork begun has ended (a cancel does not stop it)
            children = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
            return forks["done"] == forks["started"] and not excluding_zygotes(children)

        await asyncio.to_thread(
            wait_until, none_left, 10, f"no program left (cancelled at {delay})"
        )
