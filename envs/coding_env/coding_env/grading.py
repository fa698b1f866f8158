"""The trusted side of grading: the verdict is computed here, from plain data, never in the sandbox.

A task's test is written as ``CALL == LITERAL`` or ``CALL is True|False|None``. Only ``CALL`` is
sent to the sandbox, which returns ``repr`` of the value (built-in types only); this module reads
it back with ``ast.literal_eval`` (bounded), compares it with the expected literal, counts, and
computes the reward, clamped to the env's declared range. A submission can print anything and
write anything to its result pipe: the worst it gets is the values it chose, for at most
``total`` tests.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

#: The coding env's reward range (the fraction of tests passed).
REWARD_RANGE = (0.0, 1.0)
#: The longest ``repr`` of one value the grader reads back (characters).
MAX_VALUE_CHARS = 4096


@dataclass(frozen=True)
class Check:
    """One test split in two: ``call`` runs in the sandbox; ``expected`` stays here."""

    call: str
    expected: Any
    identity: bool  # ``is`` (True/False/None), else ``==``

    def passes(self, value: Any) -> bool:
        if self.identity:
            return value is self.expected
        try:
            return bool(value == self.expected)  # plain built-ins only: no custom __eq__
        except Exception:  # noqa: BLE001 - e.g. a comparison too deep for the recursion limit
            return False


@lru_cache(maxsize=1024)
def parse_test(expression: str) -> Check:
    """Split ``"add(2, 3) == 5"`` into its call and expected value; a clear error otherwise."""
    tree = ast.parse(expression, mode="eval").body
    ok = isinstance(tree, ast.Compare) and len(tree.ops) == 1
    if ok and isinstance(tree.ops[0], ast.Is):
        ok = isinstance(tree.comparators[0], ast.Constant) and tree.comparators[0].value in (
            True,
            False,
            None,
        )
    elif ok:
        ok = isinstance(tree.ops[0], ast.Eq)
    try:
        expected = ast.literal_eval(tree.comparators[0]) if ok else None
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"test {expression!r} must be 'CALL == LITERAL' or 'CALL is True|False|None'"
        )
    return Check(ast.unparse(tree.left), expected, isinstance(tree.ops[0], ast.Is))


def read_value(text: Any) -> tuple[bool, Any]:
    """``(True, value)`` for a bounded literal ``repr``; ``(False, None)`` for anything else."""
    if not isinstance(text, str) or len(text) > MAX_VALUE_CHARS:
        return False, None
    try:
        return True, ast.literal_eval(text)
    except Exception:  # noqa: BLE001 - SyntaxError, ValueError, MemoryError, RecursionError...
        return False, None


@dataclass
class Verdict:
    """What the trusted side concluded from the sandbox's result lines."""

    passed: int
    total: int
    errors: list[str]
    finished: bool  # every test reported, then "done"
    load_error: str | None = None
    protocol_error: str | None = None
    started: bool = False
    sandbox_error: str | None = None

    @property
    def reward(self) -> float:
        low, high = REWARD_RANGE
        fraction = self.passed / self.total if self.total else 0.0
        return min(high, max(low, fraction))


def grade(lines: list[bytes], checks: list[Check]) -> Verdict:
    """Read the result lines strictly: ``start``, then a load error or one ``value`` per test in
    order, then ``done``. Anything else (malformed JSON, unknown events, a repeated or
    out-of-order index, lines after the end) fails the submission with a protocol error."""
    verdict = Verdict(0, len(checks), [], False)
    index = 0
    for number, raw in enumerate(lines):
        try:
            event = json.loads(raw)
            kind = event["event"] if isinstance(event, dict) else None
        except (ValueError, KeyError, TypeError, RecursionError):
            kind = None
        if number == 0 and kind == "sandbox_error":
            verdict.sandbox_error = str(event.get("error", ""))[:500]
            return verdict
        expected_kind = (
            "start"
            if number == 0
            else None
            if verdict.finished or verdict.load_error
            else ("value", "load_error")
            if index == 0
            else ("value",)
            if index < len(checks)
            else ("done",)
        )
        if kind is None or expected_kind is None or kind not in expected_kind:
            verdict.protocol_error = f"unexpected result line {number + 1}: {raw[:80]!r}"
            verdict.passed, verdict.errors = 0, []
            return verdict
        if kind == "start":
            verdict.started = True
        elif kind == "load_error":
            verdict.load_error = str(event.get("error", ""))[:500]
        elif kind == "done":
            verdict.finished = True
        else:
            if event.get("index") != index:
                verdict.protocol_error = f"result for test {event.get('index')!r}, expected {index}"
                verdict.passed, verdict.errors = 0, []
                return verdict
            error = event.get("error")
            ok, value = read_value(event.get("repr")) if error is None else (False, None)
            if ok and checks[index].passes(value):
                verdict.passed += 1
            elif error is not None:
                verdict.errors.append(f"test {index}: {str(error)[:300]}")
            elif not ok:
                verdict.errors.append(f"test {index}: the value is not a plain built-in value")
            else:
                verdict.errors.append(f"test {index}: returned a wrong value")
            index += 1
    return verdict
