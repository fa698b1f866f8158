"""Reading client input strictly, and describing what was wrong with it in a few bytes.

Input is parsed with ``orjson``, which refuses ``NaN``/``Infinity``, lone UTF-16 surrogates and
nesting past 1,024 levels. Error replies echo at most a small, JSON-safe excerpt of the bad
value (with its size), so an error is never bigger than a few KB whatever was sent.
Writing frames is ``openenv_train.core.wire``'s job.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import ValidationError

try:
    import orjson

    def loads(text: str | bytes) -> Any:
        return orjson.loads(text)

    JSONDecodeError: tuple[type[Exception], ...] = (orjson.JSONDecodeError, ValueError)
except ImportError:  # pragma: no cover - orjson is a dependency; kept strict without it

    def _reject_constant(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    def loads(text: str | bytes) -> Any:
        return json.loads(text, parse_constant=_reject_constant)

    JSONDecodeError = (json.JSONDecodeError, ValueError)


def too_deep(exc: Exception) -> bool:
    """Whether a parse error is the parser refusing to nest further (orjson stops at 1,024
    levels): the input is too deep, which is a ``VALIDATION_ERROR`` (past 64 levels), not bad
    JSON."""
    return str(exc).startswith("depth limit exceeded")


#: Characters of a bad input (or of a field name) echoed back in an error reply.
ECHO_CHARS = 64
#: Errors listed per reply; the rest are counted.
MAX_ERRORS = 10
_MSG_CHARS = 300


def bounded_text(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` cut to ``limit`` characters (with its length) and safe to encode as UTF-8."""
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text)} chars)"
    try:
        text.encode()
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode()
    return text


def bounded_value(value: Any, depth: int = 0) -> tuple[Any, bool]:
    """A small JSON-safe stand-in for ``value`` and whether anything was left out."""
    if value is None or isinstance(value, (bool, int)):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**63:
            return f"<int of {value.bit_length()} bits>", True
        return value, False
    if isinstance(value, float):
        return (value, False) if math.isfinite(value) else (repr(value), True)
    if isinstance(value, str):
        out = bounded_text(value)
        return out, out != value
    if isinstance(value, (dict, list, tuple)):
        if depth >= 2 or len(value) > 8:
            kind = "object" if isinstance(value, dict) else "array"
            return f"<{kind} of {len(value)} items>", True
        cut = False
        if isinstance(value, dict):
            out_d: dict[str, Any] = {}
            for k, v in value.items():
                out_d[bounded_text(str(k))], c = bounded_value(v, depth + 1)
                cut = cut or c
            return out_d, cut
        out_l = []
        for v in value:
            b, c = bounded_value(v, depth + 1)
            out_l.append(b)
            cut = cut or c
        return out_l, cut
    return bounded_text(f"<{type(value).__name__}>"), True


def bounded_loc(loc: Any) -> list[Any]:
    return [p if isinstance(p, int) else bounded_text(str(p)) for p in (loc or ())]


def errors_list(exc: ValidationError, prefix: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Pydantic's errors as small JSON-safe dicts: ``type``, ``loc``, ``msg``, excerpt of ``input``."""
    return bound_errors(exc.errors(include_url=False), prefix)


def bound_errors(errors: Any, prefix: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Make any pydantic-style error list small and JSON-safe (see ``errors_list``)."""
    out: list[dict[str, Any]] = []
    for err in list(errors)[:MAX_ERRORS]:
        item: dict[str, Any] = {
            "type": bounded_text(str(err.get("type", "value_error"))),
            "loc": [*prefix, *bounded_loc(err.get("loc"))],
            "msg": bounded_text(str(err.get("msg", "invalid")), _MSG_CHARS),
        }
        if "input" in err:
            item["input"], cut = bounded_value(err["input"])
            if cut:
                item["input_truncated"] = True
        ctx = err.get("ctx")
        if isinstance(ctx, dict) and ctx:
            item["ctx"] = {bounded_text(str(k)): bounded_value(v, 1)[0] for k, v in ctx.items()}
        out.append(item)
    return out


def describe_errors(errors: list[dict[str, Any]], limit: int = 5) -> str:
    """``'action': Field required; 'colour': Extra inputs are not permitted`` (field first)."""
    parts = []
    for err in errors[:limit]:
        loc = ".".join(bounded_text(str(p)) for p in err.get("loc", ())) or "(root)"
        part = f"{loc!r}: {err.get('msg', 'invalid')}"
        if err.get("input_truncated"):
            part += f" (input shown cut to {ECHO_CHARS} chars)"
        parts.append(part)
    more = len(errors) - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)
