"""The trusted side of the coding sandbox: how tests are split, how result lines are read, and
what happens when the sandbox itself cannot start (an error, never a reward)."""

from __future__ import annotations

import json

import pytest
from coding_env import REWARD_RANGE, TASKS, TASKS_BY_ID, SandboxUnavailable, run_tests
from coding_env import sandbox as sandbox_module
from coding_env.grading import grade, parse_test, read_value
from coding_env.sandbox import default_parallel, memory_limit_bytes
from coding_env.seccomp import build_filter

CHECKS = [parse_test(t) for t in TASKS_BY_ID["add"].tests]


def _lines(*events: dict) -> list[bytes]:
    return [json.dumps(e).encode() for e in events]


def _value(index: int, text: str) -> dict:
    return {"event": "value", "index": index, "repr": text}


def test_every_task_test_splits_into_a_call_and_a_literal() -> None:
    for task in TASKS:
        for test in task.tests:
            check = parse_test(test)
            assert check.call.startswith(task.function + "("), (task.id, test)


@pytest.mark.parametrize("test", ["add(1, 2) < 4", "abs(add(1, 2)) == x", "add(1, 2) is 3", "f()"])
def test_a_test_of_another_form_is_refused_with_the_forms_named(test: str) -> None:
    with pytest.raises(ValueError, match="must be 'CALL == LITERAL' or 'CALL is True"):
        parse_test(test)


def test_identity_tests_need_the_singleton_not_an_equal_value() -> None:
    check = parse_test("is_even(4) is True")
    assert check.passes(True) and not check.passes(1)


def test_the_grammar_start_values_in_order_done() -> None:
    start, done = {"event": "start"}, {"event": "done"}
    good = grade(_lines(start, _value(0, "5"), _value(1, "0"), _value(2, "1"), done), CHECKS)
    assert (good.passed, good.finished, good.reward) == (2, True, 2 / 3)
    for bad in (
        _lines(start, _value(0, "5"), _value(0, "5")),  # a repeated index
        _lines(start, _value(1, "0")),  # out of order
        _lines(start, _value(0, "5"), _value(1, "0"), _value(2, "0"), done, done),  # after the end
        _lines(start, {"event": "test", "index": 0, "passed": True}),  # the old format
        [*_lines(start), b"{not json"],
        _lines(start, {"event": "load_error"}, {"event": "value"}),
        _lines({"event": "value", "index": 0, "repr": "5"}),  # no start
    ):
        verdict = grade(bad, CHECKS)
        assert verdict.protocol_error and verdict.passed == 0 and verdict.reward == 0.0, bad


def test_values_are_read_back_bounded_and_as_literals_only() -> None:
    assert read_value("[1, (2, 3), {'a': None}]") == (True, [1, (2, 3), {"a": None}])
    for text in ("__import__('os')", "x" * 5000, "[" * 300 + "]" * 300, "9" * 5000, 5):
        assert read_value(text)[0] is False


def test_the_reward_is_clamped_to_the_declared_range() -> None:
    verdict = grade(_lines({"event": "start"}), CHECKS)
    verdict.passed = 2000  # whatever the count, the reward stays in range
    assert verdict.reward == REWARD_RANGE[1]


def test_an_unsupported_architecture_is_refused_by_name() -> None:
    with pytest.raises(RuntimeError, match="supports x86_64, aarch64, not riscv64"):
        build_filter(1, "riscv64")


def test_a_sandbox_that_cannot_start_is_an_error_not_a_reward(monkeypatch) -> None:
    """A filter the kernel rejects: the runner refuses to run the code, and the server raises."""
    monkeypatch.setattr(sandbox_module, "build_filter", lambda pid, **_: b"\xff" * 8)
    with pytest.raises(SandboxUnavailable, match="the coding sandbox could not start"):
        run_tests("def add(a, b):\n    return a + b", TASKS_BY_ID["add"].tests)


def test_parallel_runs_fit_in_half_the_memory_limit() -> None:
    """16 CPUs in a 1 GiB container at 256 MB a run: 2 at once, not 16 (the rest is the server's)."""
    assert default_parallel(256, cpus=16, memory_limit=2**30) == 2
    assert default_parallel(256, cpus=2, memory_limit=None) <= 2
    assert default_parallel(4096, cpus=4, memory_limit=2**30) == 1
    limit = memory_limit_bytes()
    assert limit is None or limit > 0
