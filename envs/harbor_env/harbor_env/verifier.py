"""Grading as Harbor does: ``tests/`` copied to ``/tests``, ``/tests/test.sh`` run with its output
in ``/logs/verifier/test-stdout.txt``, then the reward file read: ``reward.json`` (an object of
numbers, one per metric) if present, else ``reward.txt`` (one number). Stale reward files are
removed first; a missing, empty, non-numeric or non-finite reward is the task's fault and raises
``VerifierError`` (never a reward of 0), as does a script that runs past its timeout.

Before the tests run, every process of the agent's user is killed, so nothing the agent left
running can write a reward file after the fact (not for a task whose agent runs as root, as in
Harbor).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from .errors import VerifierError
from .sandbox import get_file, make_dir, put_dir, run_in
from .task import HarborTask

VERIFIER_DIR = "/logs/verifier"
REWARD_TXT = f"{VERIFIER_DIR}/reward.txt"
REWARD_JSON = f"{VERIFIER_DIR}/reward.json"
MAX_REWARD_BYTES = 64 * 1024
OUTPUT_TAIL = 2000


@dataclass
class Verdict:
    """``reward``: the headline score (``reward`` in the file, else the mean of the metrics);
    ``rewards``: every metric the file holds; ``output``: the tail of the tests' output."""

    reward: float
    rewards: dict[str, float] = field(default_factory=dict)
    output: str = ""
    seconds: float = 0.0


def parse_rewards(json_text: bytes | None, txt_text: bytes | None) -> dict[str, float]:
    """Harbor's rule: ``reward.json`` wins over ``reward.txt``; each must hold finite numbers."""
    if json_text is not None:
        if not json_text.strip():
            raise VerifierError(f"{REWARD_JSON} is empty")
        try:
            data: Any = json.loads(json_text)
        except ValueError as err:
            raise VerifierError(f"{REWARD_JSON} is not JSON: {err}") from err
        if not isinstance(data, dict) or not data:
            raise VerifierError(
                f"{REWARD_JSON} must be an object of metric -> number, got {data!r}"
            )
        out = {}
        for key, value in data.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise VerifierError(f"{REWARD_JSON}: metric {key!r} is not a number: {value!r}")
            if not math.isfinite(value):
                raise VerifierError(f"{REWARD_JSON}: metric {key!r} is not finite: {value!r}")
            out[str(key)] = float(value)
        return out
    if txt_text is not None:
        if not txt_text.strip():
            raise VerifierError(f"{REWARD_TXT} is empty")
        try:
            value = float(txt_text.decode(errors="replace").strip())
        except ValueError as err:
            raise VerifierError(f"{REWARD_TXT} is not a number: {txt_text[:80]!r}") from err
        if not math.isfinite(value):
            raise VerifierError(f"{REWARD_TXT} is not finite: {value!r}")
        return {"reward": value}
    raise VerifierError(f"tests/test.sh wrote neither {REWARD_JSON} nor {REWARD_TXT}")


def headline(rewards: dict[str, float]) -> float:
    """The one number of a verdict: the ``reward`` metric, else the mean of all metrics."""
    if "reward" in rewards:
        return rewards["reward"]
    return sum(rewards.values()) / len(rewards)


def verify(client: Any, name: str, task: HarborTask) -> Verdict:
    """Run the task's tests in container ``name`` and read the reward file."""
    run_in(
        client,
        name,
        "kill -9 -1 2>/dev/null; true",
        user=task.agent_user,
        timeout_s=10,
        max_bytes=1024,
    )
    put_dir(client, name, task.tests_dir, "/tests")
    make_dir(client, name, VERIFIER_DIR, 0o777)
    run_in(
        client,
        name,
        f"rm -f {REWARD_TXT} {REWARD_JSON}",
        user=task.verifier_user,
        timeout_s=10,
        max_bytes=1024,
    )
    res = run_in(
        client,
        name,
        f"/tests/test.sh > {VERIFIER_DIR}/test-stdout.txt 2>&1",
        user=task.verifier_user,
        timeout_s=task.verifier_timeout_s,
        max_bytes=OUTPUT_TAIL,
        workdir=task.workdir,
        env={**task.env, **task.verifier_env},
    )
    out = get_file(client, name, f"{VERIFIER_DIR}/test-stdout.txt", 16 * 1024 * 1024) or b""
    tail = out[-OUTPUT_TAIL:].decode(errors="replace")
    if res.timed_out:
        raise VerifierError(
            f"task {task.name}: tests/test.sh ran past [verifier] timeout_sec "
            f"({task.verifier_timeout_s:g} s); output tail:\n{tail}"
        )
    try:
        rewards = parse_rewards(
            get_file(client, name, REWARD_JSON, MAX_REWARD_BYTES),
            get_file(client, name, REWARD_TXT, MAX_REWARD_BYTES),
        )
    except VerifierError as err:
        raise VerifierError(f"task {task.name}: {err}; test output tail:\n{tail}") from err
    return Verdict(reward=headline(rewards), rewards=rewards, output=tail, seconds=res.seconds)
