"""The server's worker pool under a full pids limit (issue 35, finding 4): a thread bomb in a
run once made ``Thread.start()`` fail inside the pool's watch callback, which then never ran
again; every later call of every session got no reply. Here starts fail on purpose (the same
``RuntimeError`` the interpreter raises), then succeed again: the queued calls must complete."""

from __future__ import annotations

import asyncio
import threading

import pytest
from server_helpers import until

from openenv_train.server._threads import ThreadRunner

pytestmark = pytest.mark.timeout(60)


class _Refuse:
    """``threading.Thread.start`` that raises while ``refusing`` is set (the pids limit)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.refusing = threading.Event()
        real = threading.Thread.start

        def start(thread: threading.Thread) -> None:
            if self.refusing.is_set() and thread.name.startswith("pool-under-test"):
                raise RuntimeError("can't start new thread")
            real(thread)

        monkeypatch.setattr(threading.Thread, "start", start)


async def test_calls_complete_once_threads_can_start_again(monkeypatch: pytest.MonkeyPatch):
    refuse = _Refuse(monkeypatch)
    runner = ThreadRunner(max_workers=4, name="pool-under-test", stall_s=0.01)
    gate = threading.Event()
    stuck = asyncio.ensure_future(runner.run(gate.wait, 30))  # the one worker is busy
    await until(lambda: runner.workers >= 1 and runner.stalled_s() == 0, 10, "a worker taking it")
    refuse.refusing.set()
    waiting = [asyncio.ensure_future(runner.run(lambda i=i: i)) for i in range(3)]
    # the watch tried, failed, and tried again
    await until(lambda: runner.start_failures >= 2, 10, "two refused thread starts")
    assert runner.workers == 1  # a failed start is not counted as a worker
    assert runner.stalled_s() > 0
    refuse.refusing.clear()
    assert await asyncio.wait_for(asyncio.gather(*waiting), 10) == [0, 1, 2]
    gate.set()
    assert await stuck is True
    assert runner.stalled_s() == 0.0
    runner.shutdown()


async def test_the_first_worker_failing_to_start_is_retried(monkeypatch: pytest.MonkeyPatch):
    refuse = _Refuse(monkeypatch)
    refuse.refusing.set()
    runner = ThreadRunner(max_workers=2, name="pool-under-test", stall_s=0.01)
    job = asyncio.ensure_future(runner.run(lambda: "done"))
    await until(lambda: runner.start_failures >= 2, 10, "two refused thread starts")
    assert runner.workers == 0
    refuse.refusing.clear()
    assert await asyncio.wait_for(job, 10) == "done"
    runner.shutdown()
