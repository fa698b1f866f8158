"""Fair sandbox slots (issue 22): one session flooding the sandbox cannot starve another.

The scenario runs the real ``CodingEnvironment`` in a child process with one sandbox slot
(``CODING_MAX_PARALLEL=1``, read at import), the sandbox replaced by a gate this test opens one
run at a time, so the order in which runs start is exact (no timing). Session A keeps one run in
the slot and queues nine more from nine threads; then session B submits. The bound is in queue
positions: B's run starts after at most one more of A's runs (one turn per other waiting session),
where a first-come semaphore starts every one of A's nine first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCENARIO = r"""
import json, sys, threading, time
from coding_env.server import environment
from coding_env.sandbox import RunResult
from coding_env import CodeAction

started, gate = [], threading.Semaphore(0)
entered = threading.Semaphore(0)

def fake_run_tests(code, tests, limits=None):
    started.append(code)
    gate.acquire()
    return RunResult(0, len(tests), "ok")

environment.run_tests = fake_run_tests
a, b = environment.CodingEnvironment(), environment.CodingEnvironment()
a.reset(task_id="add", max_attempts=10)
b.reset(task_id="add", max_attempts=1)

def step(env, who):
    entered.release()
    env.step(CodeAction(code=who))

def wait_for(done, what):
    deadline = time.monotonic() + 60
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.001)

def wait_started(n):
    wait_for(lambda: len(started) >= n, f"run {n} never started")

def wait_queued(n):  # submissions waiting for the slot
    wait_for(lambda: environment.SLOTS.waiting() >= n, f"{n} submissions never queued")

threads = [threading.Thread(target=step, args=(a, "A"))]
threads[0].start()
wait_started(1)  # A holds the one slot
for _ in range(9):
    threads.append(threading.Thread(target=step, args=(a, "A")))
    threads[-1].start()
for _ in range(9):
    entered.acquire()
wait_queued(9)  # A's nine wait in the slot queue
threads.append(threading.Thread(target=step, args=(b, "B")))
threads[-1].start()
entered.acquire()
wait_queued(10)  # and B behind them
for n in range(2, 12):  # open the gate one run at a time; each opening starts the next run
    gate.release()
    wait_started(n)
gate.release()
for t in threads:
    t.join()
print(json.dumps(started))
"""


def test_a_flooding_session_cannot_starve_another() -> None:
    env = {
        **os.environ,
        "CODING_MAX_PARALLEL": "1",
        "PYTHONPATH": f"{ROOT / 'envs' / 'coding_env'}:{ROOT}:{os.environ.get('PYTHONPATH', '')}",
    }
    done = subprocess.run(
        [sys.executable, "-c", SCENARIO], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    started = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(started) == ["A"] * 10 + ["B"], started
    # started[0] was in the slot when B came; B waits behind at most one more of A's runs
    assert started.index("B") <= 2, started


def test_slots_round_robin_and_bounds() -> None:
    """The primitive itself: a freed slot goes to the next session in turn, never to a newcomer
    while anyone waits; bad capacity is refused with the field's name."""
    from coding_env.slots import FairSlots

    with pytest.raises(ValueError, match="capacity"):
        FairSlots(0)
    slots = FairSlots(2)
    slots.acquire("x")
    slots.acquire("y")
    assert slots.waiting() == 0
    slots.release()
    slots.release()
    slots.acquire("z")  # free again: no wait
    slots.release()
