"""An env server's MCP tools as a TRL ``environment_factory`` class.

TRL 1.16's ``GRPOTrainer(environment_factory=cls)`` instantiates ``cls()`` per rollout, calls
``reset(**dataset_row)``, offers every public method as a tool (name, signature and Google-style
docstring become the tool schema in the chat template) and calls ``get_reward()`` at the end.
:func:`make_environment_class` builds such a class from a running server (ours or OpenEnv 0.10's:
the wire is the same): each MCP tool becomes a real method whose signature and docstring are
generated from the tool's JSON schema, and every instance owns one WebSocket session.
"""

from __future__ import annotations

import atexit
import inspect
import json
import keyword
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ..client import MCPToolClient, ToolCallError
from ..client.mcp_client import unwrap_tool_result
from ..client.sync import SyncEnvClient
from ..core.mcp_types import CallToolAction, CallToolObservation, Tool

_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}
_RESERVED = frozenset({"reset", "get_reward"})


def _py_type(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind is None:
        for key in ("anyOf", "oneOf"):
            options = [o for o in schema.get(key) or [] if o.get("type") != "null"]
            if len(options) == 1:
                return _py_type(options[0])
    return _JSON_TYPES.get(kind, str) if isinstance(kind, str) else str


def _check_name(name: str, what: str) -> None:
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        raise ValueError(
            f"{what} {name!r} is not usable as a Python method name; rename it to a public identifier "
            "(letters, digits, underscores, not starting with '_')"
        )


def tool_method(tool: Tool) -> Callable[..., Any]:
    """A method ``def <tool.name>(self, <args from the schema>) -> str`` that calls the tool.

    The docstring is Google style (description, ``Args:`` with every parameter), so that
    ``transformers.utils.get_json_schema`` (what TRL uses) rebuilds the tool's schema from it.
    """
    _check_name(tool.name, "tool name")
    if tool.name in _RESERVED:
        raise ValueError(
            f"tool name {tool.name!r} clashes with TRL's {tool.name}(); rename the tool"
        )
    schema = tool.input_schema or {}
    props: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    arg_lines = []
    ordered = [p for p in props if p in required] + [p for p in props if p not in required]
    for pname in ordered:
        pschema = props[pname] if isinstance(props[pname], dict) else {}
        _check_name(pname, f"tool {tool.name!r} argument")
        annotation = _py_type(pschema)
        default = inspect.Parameter.empty if pname in required else pschema.get("default")
        params.append(
            inspect.Parameter(
                pname,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=default,
                annotation=annotation,
            )
        )
        annotations[pname] = annotation
        desc = " ".join(
            str(
                pschema.get("description") or pschema.get("title") or f"The {pname} argument."
            ).split()
        )
        if pschema.get("enum"):
            desc += f" (choices: {pschema['enum']})"
        arg_lines.append(f"    {pname}: {desc}")
    annotations["return"] = str
    summary = " ".join(
        (tool.description or f"Call the {tool.name} tool.").strip().split("\n\n")[0].split()
    )
    doc = summary + ("\n\nArgs:\n" + "\n".join(arg_lines) if arg_lines else "")
    doc += "\n\nReturns:\n    The tool's result as text."
    names = [p.name for p in params[1:]]
    signature = inspect.Signature(params, return_annotation=str)

    def method(self: Any, *args: Any, **kwargs: Any) -> str:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = {k: bound.arguments[k] for k in names if bound.arguments.get(k) is not None}
        return self._call_tool(tool.name, arguments)

    method.__name__ = method.__qualname__ = tool.name
    method.__doc__ = doc
    method.__dict__["__signature__"] = signature  # what inspect.signature (TRL's tool schema) reads
    method.__annotations__ = annotations
    return method


class EnvSessionBase:
    """Base of generated environment classes: one session, ``reset``, ``get_reward``.

    Subclasses set ``base_url`` (or ``_base_urls`` for round-robin over several servers).
    """

    _base_urls: Sequence[str] = ()
    _client_cls: type = MCPToolClient
    _reset_keys: tuple[str, ...] = ("seed", "episode_id")
    _reward_mode: str = "last"
    _render_reset: Callable[[Any], str | None] | None = None
    _timeout: float = 30.0
    _counter = 0
    _servers: Any = None  # a server group or pool the class owns (stopped by release_all)
    _live: weakref.WeakSet[EnvSessionBase]

    def __init__(self) -> None:
        cls = type(self)
        if not cls._base_urls:
            raise ValueError(
                f"{cls.__name__}: no server URL; build the class with make_environment_class(url)"
            )
        EnvSessionBase._counter += 1
        url = cls._base_urls[EnvSessionBase._counter % len(cls._base_urls)]
        self._client: SyncEnvClient[Any, Any, Any] = cls._client_cls(
            url,
            timeout=cls._timeout,
            mode="simulation",  # tool calls are steps on one socket
        ).sync()
        self._connected = False
        self._rewards: list[float] = []
        self._done = False
        weakref.finalize(self, _close_quietly, self._client)
        cls._live.add(self)

    def _release(self) -> None:
        _close_quietly(self._client)

    @classmethod
    def release_all(cls) -> None:
        """Close every instance's session and stop the servers the class owns.

        TRL's ``environment_factory`` never calls ``close()`` on the instances it makes, so
        ``ReleaseEnvironments`` (a trainer callback) calls this at train end, and so does an exit
        hook. (A classmethod: TRL offers only plain methods as tools.)
        """
        for env in list(cls._live):
            env._release()
        cls._live.clear()
        servers, cls._servers = cls._servers, None
        if servers is not None:
            servers.stop()

    def _ensure(self) -> None:
        if not self._connected:
            self._client.connect()
            self._connected = True

    def reset(self, **kwargs: Any) -> str | None:
        """Start a new episode. Dataset columns named in ``reset_keys`` (e.g. ``seed``) go to the env."""
        self._ensure()
        reset_kwargs = {k: kwargs[k] for k in self._reset_keys if kwargs.get(k) is not None}
        result = self._client.reset(**reset_kwargs)
        self._rewards, self._done = [], bool(result.done)
        render = type(self)._render_reset
        return render(result) if render is not None else None

    def get_reward(self) -> float | None:
        """The env's reward for this episode (last or summed step rewards); None if it gave none."""
        if not self._rewards:
            return None
        return float(sum(self._rewards)) if self._reward_mode == "sum" else float(self._rewards[-1])

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        self._ensure()
        if self._done:
            return "The episode is over; no more tool calls are accepted."
        result = self._client.step(CallToolAction(tool_name=name, arguments=arguments))
        if result.reward is not None:
            self._rewards.append(float(result.reward))
        self._done = bool(result.done)
        obs = result.observation
        if isinstance(obs, CallToolObservation):
            if obs.error is not None:
                raise ToolCallError(name, obs.error.error_type, obs.error.message)
            value = unwrap_tool_result(obs.result)
        else:
            value = obs.model_dump(exclude={"metadata"}) if hasattr(obs, "model_dump") else obs
        return value if isinstance(value, str) else json.dumps(value, default=str)


def _close_quietly(client: SyncEnvClient[Any, Any, Any]) -> None:
    try:
        client.close()
    except Exception:
        pass


def list_server_tools(
    base_url: str, *, client_cls: type = MCPToolClient, timeout: float = 30.0
) -> list[Tool]:
    """The MCP tools of the env at ``base_url`` (one short session)."""
    with client_cls(base_url, timeout=timeout, mode="simulation").sync() as client:
        client.reset()
        return list(client.list_tools())


def make_environment_class(
    servers: str | Sequence[Any],
    *,
    tools: Sequence[Tool] | None = None,
    name: str = "OpenEnvToolEnvironment",
    client_cls: type = MCPToolClient,
    reset_keys: Sequence[str] = ("seed", "episode_id"),
    reward_mode: str = "last",
    render_reset: Callable[[Any], str | None] | None = None,
    timeout: float = 30.0,
    own_servers: bool = False,
) -> type[EnvSessionBase]:
    """A TRL ``environment_factory`` class for the MCP env(s) at ``servers`` (URLs or providers).

    ``tools`` defaults to the server's own list (fetched once now). Instances spread over the
    servers round-robin. ``reward_mode``: ``"last"`` step reward or their ``"sum"``.
    ``render_reset(step_result)`` gives text appended to the prompt after ``reset`` (default none).
    ``servers`` may be a server group or ``EnvPool`` (anything with ``.base_urls``);
    ``own_servers=True`` makes ``release_all()`` stop it too.
    """
    if hasattr(servers, "base_urls"):
        servers_obj, servers = servers, list(servers.base_urls)
    else:
        servers_obj = None
    if own_servers and servers_obj is None:
        raise ValueError("own_servers=True needs a server group or pool (with .stop()), not URLs")
    urls = (
        [servers]
        if isinstance(servers, str)
        else [s if isinstance(s, str) else s.base_url for s in servers]
    )
    if not urls or not all(isinstance(u, str) and u for u in urls):
        raise ValueError("servers: give at least one base URL (or started provider with .base_url)")
    if reward_mode not in ("last", "sum"):
        raise ValueError(f"reward_mode={reward_mode!r}: use 'last' or 'sum'")
    _check_name(name, "class name")
    tool_list = (
        list(tools)
        if tools is not None
        else list_server_tools(urls[0], client_cls=client_cls, timeout=timeout)
    )
    if not tool_list:
        raise ValueError(
            f"the env at {urls[0]} exposes no MCP tools; an environment_factory needs at least one"
        )
    namespace: dict[str, Any] = {
        "_base_urls": tuple(urls),
        "_client_cls": client_cls,
        "_reset_keys": tuple(reset_keys),
        "_reward_mode": reward_mode,
        "_render_reset": staticmethod(render_reset) if render_reset else None,
        "_timeout": timeout,
        "__doc__": f"TRL environment for the MCP env at {urls[0]} (tools: {', '.join(t.name for t in tool_list)}).",
    }
    for t in tool_list:
        namespace[t.name] = tool_method(t)
    namespace["_live"] = weakref.WeakSet()
    if own_servers:
        namespace["_servers"] = servers_obj
    cls = type(name, (EnvSessionBase,), namespace)
    atexit.register(_release_at_exit, weakref.ref(cls))
    return cls


def _release_at_exit(ref: weakref.ref[type[EnvSessionBase]]) -> None:
    cls = ref()
    if cls is not None:
        try:
            cls.release_all()
        except Exception:
            pass


def release_callback(*classes: type[EnvSessionBase]) -> Any:
    """A ``TrainerCallback`` that calls ``release_all()`` of ``classes`` when training ends.

    ``GRPOTrainer(environment_factory=cls, callbacks=[release_callback(cls)])``; the exit hook
    covers a run that crashes before ``on_train_end``.
    """
    from transformers import TrainerCallback

    class ReleaseEnvironments(TrainerCallback):
        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            for cls in classes:
                cls.release_all()

    return ReleaseEnvironments()
