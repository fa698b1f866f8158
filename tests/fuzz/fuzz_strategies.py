"""Hypothesis strategies that build ``/ws`` frames, batch messages (``/ws`` with batch framing),
MCP JSON-RPC requests (``POST /mcp`` and the ``/mcp`` WebSocket) and HTTP bodies from a server's
own schemas, then break them: wrong types, unhashable values, huge and deeply nested values, bad
UTF-8, lone surrogates, NaN, missing and extra fields. Plus ``FuzzServer``, the real server under
test.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import strategies as st

from openenv_train.runtime import LocalProcessProvider

#: An error reply may be at most this big, whatever was sent.
ERROR_REPLY_MAX = 16 * 1024


def reply_bound(request_size: int) -> int:
    """Observations may echo the request (the echo env does); errors never may."""
    return ERROR_REPLY_MAX + 2 * request_size


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
def objects(
    draw: st.DrawFn, schema: dict[str, Any], defs: dict[str, Any], nasty: bool = True
) -> dict[str, Any]:
    """An object for ``schema`` with some fields mutated, dropped or added (``nasty``: some
    huge or deeply nested)."""
    out: dict[str, Any] = {}
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    for name, sub in props.items():
        mode = draw(st.sampled_from(["valid"] * 6 + ["wrong", "nasty", "drop"]))
        if mode == "drop" or (name not in required and draw(st.booleans())):
            continue
        if mode == "valid":
            out[name] = draw(for_schema(sub, defs))
        elif mode == "wrong" or not nasty:
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


def rarely(n: int) -> st.SearchStrategy[bool]:
    """True about once in ``n`` draws. The True case sits mid-range: Hypothesis draws both ends
    of a range far more often than the middle (and shrinks toward False, the usual case)."""
    return st.sampled_from([False] * (n // 2) + [True] + [False] * (n - n // 2 - 1))


def _mostly(
    usual: st.SearchStrategy[Any], odd: st.SearchStrategy[Any], odds: int = 6
) -> st.SearchStrategy[Any]:
    """``usual`` ``odds`` times in ``odds + 1``, else ``odd``."""
    return rarely(odds + 1).flatmap(lambda r: odd if r else usual)


# ---- the batch framing on /ws ---------------------------------------------------------------

#: Session numbers from a small range, so numbers repeat in a message, get closed and come back
#: (then they are closed for good); and a few huge ones (a huge one ends the new numbers).
session_numbers = _mostly(st.integers(0, 6), st.sampled_from([2**31, 2**53, 2**64 - 1]), 20)
#: Not a session number: the whole message is refused (2**64 parses as a float).
bad_session_numbers = st.sampled_from([-1, -(2**63), True, False, 1.5, "1", None, [], {}, 2**64])
#: The session number a batch fuzz example opens first and uses to check the connection still
#: serves; the strategies never close it.
HONEST_SESSION = 0


@st.composite
def sub_frames(draw: st.DrawFn, action_schema: dict[str, Any]) -> Any:
    """One sub-frame of a batch message: a standard frame of any type (broken payloads included)
    plus ``session``; rarely one the whole message is refused for (no valid ``session``)."""
    kind = draw(
        st.sampled_from(["step"] * 4 + ["reset", "state", "mcp", "close", "close", "close+", "odd"])
    )
    if kind == "step":  # mostly no huge or deep values: one of those refuses the whole message
        plain = objects(action_schema, action_schema.get("$defs", {}), nasty=False)
        frame: dict[str, Any] = {
            "type": "step",
            "data": draw(_mostly(plain, action_strategy(action_schema), odds=9)),
        }
    elif kind == "reset":
        frame = {"type": "reset", "data": draw(reset_bodies())}
    elif kind == "state":
        frame = {"type": "state"}
    elif kind == "mcp":
        frame = {"type": "mcp", "data": draw(rpc_requests())}
    elif kind == "close":
        frame = {"type": "close"} if draw(st.booleans()) else {"type": "close", "data": None}
    elif kind == "close+":  # a close with a stray field: not a close on an open session
        frame = {"type": "close", draw(st.text(min_size=1, max_size=8)): draw(json_values)}
    else:
        frame = draw(st.dictionaries(st.text(max_size=8), json_values, max_size=3))
        frame["type"] = draw(json_values.filter(lambda v: v != "close"))
    broken = draw(st.sampled_from(["garbage", "missing", "bad"])) if draw(rarely(20)) else ""
    if broken == "garbage":  # not an object: the message is refused whole
        return draw(json_values.filter(lambda v: not isinstance(v, dict)))
    if broken == "missing":
        frame.pop("session", None)  # no session: refused
    elif broken == "bad":
        frame["session"] = draw(bad_session_numbers)
    elif frame.get("type") == "close":
        frame["session"] = draw(session_numbers.filter(lambda k: k != HONEST_SESSION))
    else:
        frame["session"] = draw(session_numbers)
    return frame


#: Valid frames any env answers, for runs on one session number.
_RUN_FRAMES = {
    "state": {"type": "state"},
    "reset": {"type": "reset"},
    "close": {"type": "close"},
    "mcp": {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}},
}


@st.composite
def session_runs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Valid sub-frames in a row on one (non-honest) session number, closes among them: the
    orderings where a frame waits on the number's opening or queues behind its close."""
    key = draw(session_numbers.filter(lambda k: k != HONEST_SESSION))
    kinds = draw(st.lists(st.sampled_from(sorted(_RUN_FRAMES)), min_size=2, max_size=5))
    return [{**_RUN_FRAMES[kind], "session": key} for kind in kinds]


#: Sub-frames a bulk message repeats: cheap ones, answered or not.
_BULK_UNITS = [
    {"session": HONEST_SESSION, "type": "state"},
    {"session": HONEST_SESSION, "type": "nope"},
    {"session": HONEST_SESSION, "type": "step", "data": {}},
    {"session": 9, "type": "close"},
]


@st.composite
def batch_messages(draw: st.DrawFn, action_schema: dict[str, Any], max_frames: int) -> str | bytes:
    """One message on a batch connection: mostly well-formed envelopes of fuzzed sub-frames,
    some bulk ones around ``max_frames`` sub-frames, broken envelopes, byte-level breakage."""
    kind = draw(st.sampled_from(["frames"] * 6 + ["bulk", "envelope", "mutated"]))
    if kind == "bulk":
        count = draw(st.sampled_from([max_frames, max_frames + 1]) | st.integers(50, 400))
        unit = draw(st.sampled_from(_BULK_UNITS))
        return json.dumps({"type": "batch", "frames": [unit] * count})
    if kind == "envelope":
        frames = st.lists(sub_frames(action_schema), max_size=3)
        return json.dumps(
            draw(
                json_values  # not a batch message at all
                | st.fixed_dictionaries(
                    {"type": st.just("batch")},
                    optional={"frames": json_values.filter(lambda v: not isinstance(v, list))},
                )
                | st.fixed_dictionaries(
                    {"type": json_values.filter(lambda v: v != "batch"), "frames": frames}
                )
                | st.fixed_dictionaries(  # a stray top-level field is ignored
                    {"type": st.just("batch"), "frames": frames, "extra": json_values}
                )
            )
        )
    frames = draw(st.lists(sub_frames(action_schema), max_size=10))
    if draw(st.booleans()):  # runs of valid frames on one number: opened, closed, used after
        for run in draw(st.lists(session_runs(), min_size=1, max_size=3)):
            at = draw(st.integers(0, len(frames)))
            frames[at:at] = run
    text = json.dumps({"type": "batch", "frames": frames})
    return draw(mutate_text(text)) if kind == "mutated" else text


# ---- MCP JSON-RPC over the /mcp WebSocket ---------------------------------------------------

#: JSON-RPC ids of every JSON type, valid (a string of at most 256 characters, a 64-bit integer,
#: null) and not.
rpc_ids = _mostly(
    st.integers(min_value=-(2**63), max_value=2**63) | st.text(max_size=40),
    st.none()
    | st.booleans()
    | st.integers(min_value=2**63 - 2, max_value=2**70)
    | st.floats()
    | st.text(min_size=250, max_size=300)
    | st.lists(leaves, max_size=2)
    | st.dictionaries(st.text(max_size=4), leaves, max_size=2),
    odds=2,
)
_METHODS = [
    "tools/list",
    "tools/call",
    "openenv/session/create",
    "openenv/session/close",
    "initialize",
    "ping",
    "nope",
    "",
]


def _rpc_params() -> st.SearchStrategy[Any]:
    arguments = (
        st.fixed_dictionaries({"message": st.text(max_size=60) | json_values | nasty_values})
        | json_values
        | nasty_values
    )
    return (
        st.fixed_dictionaries(
            {},
            optional={
                "name": _mostly(
                    st.sampled_from(["echo_message", "echo_with_length", "nope"]), json_values
                ),
                "arguments": arguments,
                "session_id": st.text(max_size=40) | json_values,
            },
        )
        | json_values
    )


@st.composite
def rpc_ws_requests(draw: st.DrawFn) -> dict[str, Any]:
    """A JSON-RPC request object, mostly valid, with wrong versions, methods, ids and params."""
    req: dict[str, Any] = {
        "jsonrpc": draw(_mostly(st.just("2.0"), json_values)),
        "method": draw(_mostly(st.sampled_from(_METHODS), st.text(max_size=20) | json_values)),
    }
    if not draw(rarely(5)):
        req["id"] = draw(rpc_ids)
    if not draw(rarely(4)):
        req["params"] = draw(_rpc_params())
    if draw(rarely(15)):
        req[draw(st.text(min_size=1, max_size=8))] = draw(json_values)
    return req


@st.composite
def mcp_ws_frames(draw: st.DrawFn) -> str | bytes:
    """One ``/mcp`` WebSocket message: a request, a JSON-RPC batch (an array), any JSON value,
    an empty message, or any of them broken at the byte level."""
    kind = draw(st.sampled_from(["request"] * 6 + ["batch", "value", "empty"]))
    if kind == "empty":
        return draw(st.sampled_from(["", b""]))
    if kind == "request":
        value: Any = draw(rpc_ws_requests())
    elif kind == "batch":
        value = draw(st.lists(rpc_ws_requests(), max_size=3))
    else:
        value = draw(json_values)
    text = json.dumps(value)
    return draw(mutate_text(text)) if draw(rarely(4)) else text


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
