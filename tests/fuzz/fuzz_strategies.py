"""Hypothesis strategies that build ``/ws`` frames and HTTP bodies from a server's own schemas,
then break them: wrong types, unhashable values, huge and deeply nested values, bad UTF-8,
lone surrogates, NaN, missing and extra fields. Plus ``FuzzServer``, the real server under test.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import strategies as st

from openenv_train.runtime import LocalProcessProvider

#: An error reply may be at most this big, whatever was sent.
ERROR_REPLY_MAX = 16 * 1024

leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63, max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=16,
)
#: Values that have broken servers before: huge, deep, odd.
nasty_values = st.one_of(
    st.integers(min_value=1, max_value=300_000).map(lambda n: "x" * n),
    st.integers(min_value=1, max_value=900).map(lambda n: _nest(n)),
    st.sampled_from([[], {}, [[]], {"": None}, "", "\x00", "\u202e", "🦀" * 100, -0.0, 1e308]),
)


def _nest(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def for_schema(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Mostly-valid values for a JSON schema (the subset pydantic emits)."""
    if "$ref" in schema:
        schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([for_schema(s, defs) for s in schema[key]])
    kind = schema.get("type")
    if kind == "string":
        return st.text(max_size=60)
    if kind == "integer":
        return st.integers(min_value=-(2**31), max_value=2**31)
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(json_values, max_size=4)
    if kind == "object" and "properties" in schema:
        return objects(schema, defs)
    return json_values


@st.composite
def objects(draw: st.DrawFn, schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """An object for ``schema`` with some fields mutated, dropped or added."""
    out: dict[str, Any] = {}
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    for name, sub in props.items():
        mode = draw(st.sampled_from(["valid"] * 6 + ["wrong", "nasty", "drop"]))
        if mode == "drop" or (name not in required and draw(st.booleans())):
            continue
        if mode == "valid":
            out[name] = draw(for_schema(sub, defs))
        elif mode == "wrong":
            out[name] = draw(json_values)
        else:
            out[name] = draw(nasty_values)
    if draw(st.integers(0, 9)) == 0:
        out[draw(st.text(min_size=1, max_size=12))] = draw(json_values)
    return out


def action_strategy(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    defs = schema.get("$defs", {})
    return objects(schema, defs) | json_values | nasty_values


@st.composite
def frames(draw: st.DrawFn, action_schema: dict[str, Any]) -> str | bytes:
    """A ``/ws`` frame: mostly well-formed requests with broken payloads, some raw breakage."""
    kind = draw(st.sampled_from(["step"] * 5 + ["reset", "state", "mcp", "odd"]))
    if kind == "step":
        frame: Any = {"type": "step", "data": draw(action_strategy(action_schema))}
    elif kind == "reset":
        frame = {"type": "reset", "data": draw(reset_bodies())}
    elif kind == "state":
        frame = {"type": "state"}
    elif kind == "mcp":
        frame = {"type": "mcp", "data": draw(rpc_requests())}
    else:
        frame = draw(
            json_values.filter(lambda v: not (isinstance(v, dict) and v.get("type") == "close"))
        )
        if draw(st.booleans()):
            frame = {"type": draw(json_values.filter(lambda v: v != "close"))}
    text = json.dumps(frame)
    return draw(mutate_text(text))


@st.composite
def mutate_text(draw: st.DrawFn, text: str) -> str | bytes:
    """Leave the JSON text alone (most often) or break it at the byte level."""
    how = draw(
        st.sampled_from(["none"] * 6 + ["truncate", "nan", "surrogate", "bad_utf8", "junk", "deep"])
    )
    if how == "deep":  # deeper than any encoder here can write as a value
        n = draw(st.integers(min_value=900, max_value=5_000))
        return '{"type": "step", "data": {"x": ' + "[" * n + "]" * n + "}}"
    if how == "truncate":
        return text[: draw(st.integers(0, max(0, len(text) - 1)))]
    if how == "nan":
        return text.replace("0", "NaN", 1) if "0" in text else "NaN"
    if how == "surrogate":
        return text.replace('"', '"\\ud800', 1) if '"' in text else '"\\udfff"'
    if how == "bad_utf8":
        cut = draw(st.integers(0, len(text)))
        return text.encode()[:cut] + b"\xff\xfe" + text.encode()[cut:]
    if how == "junk":
        return draw(st.binary(max_size=64))
    return text


def reset_bodies() -> st.SearchStrategy[Any]:
    return (
        st.fixed_dictionaries(
            {},
            optional={
                "seed": st.integers(min_value=-5, max_value=2**40) | json_values,
                "episode_id": st.text(max_size=300) | json_values,
            },
        )
        | json_values
    )


def rpc_requests() -> st.SearchStrategy[Any]:
    methods = st.sampled_from(
        ["tools/list", "tools/call", "openenv/session/close", "initialize", "nope"]
    )
    return (
        st.fixed_dictionaries(
            {"jsonrpc": st.just("2.0") | json_values, "method": methods | json_values},
            optional={
                "id": st.integers() | st.text(max_size=300) | json_values,
                "params": st.fixed_dictionaries(
                    {},
                    optional={
                        "name": st.sampled_from(["echo_message", "nope"]) | json_values,
                        "arguments": json_values,
                        "session_id": st.text(max_size=40) | json_values,
                    },
                )
                | json_values,
            },
        )
        | json_values
    )


class FuzzServer:
    """A real env server in a subprocess, with the checks every fuzz example ends with."""

    def __init__(self, app: str) -> None:
        self.provider = LocalProcessProvider(app)
        self.url = ""
        self.schema: dict[str, Any] = {}

    def start(self) -> FuzzServer:
        self.url = self.provider.start()
        self.ws_url = self.url.replace("http://", "ws://") + "/ws"
        self.http = httpx.Client(base_url=self.url, timeout=10)  # one client: no per-call setup
        self.schema = self.http.get("/schema").json()
        return self

    def stop(self) -> None:
        self.http.close()
        self.provider.stop()

    def health(self) -> dict[str, Any]:
        assert self.provider.running, f"the server died:\n{self.provider.logs(40)}"
        r = self.http.get("/health")
        assert r.status_code == 200, r.text[:300]
        return r.json()

    def assert_healthy_and_empty(self) -> None:
        assert self.health()["active_sessions"] == 0, "a session leaked"
        logs = self.provider.logs(200)
        assert "Traceback" not in logs, logs[-3000:]
