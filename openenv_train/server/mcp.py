"""``MCPEnvironment``: an env whose actions are MCP tool calls, declared with ``@tool``.

Tools come from plain methods: the name from the method, the description from its docstring,
the input schema from its signature and type hints (a pydantic model per tool, built once at
class definition). A bad tool (reserved name, missing type hint) fails at class definition, not
at the first call. A bad *call* (unknown tool, wrong arguments, the tool raising) becomes a
``CallToolObservation`` with a ``ToolError``, never a crashed session.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ..core.mcp import (
    RESERVED_TOOL_NAMES,
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from ..core.models import Action, Observation
from ._threads import run_sync
from .encoding import bounded_text, describe_errors
from .environment import Environment

_TOOL_ATTR = "__openenv_tool__"


@dataclass(frozen=True)
class _ToolMark:
    name: str | None
    description: str | None


@dataclass
class ToolSpec:
    """A tool bound to its method: schema, argument model and how to call it."""

    name: str
    description: str
    method_name: str
    args_model: type[BaseModel]
    is_async: bool
    tool: Tool


def tool(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None
) -> Any:
    """Mark a method of an ``MCPEnvironment`` as an MCP tool (``@tool`` or ``@tool(name=...)``)."""

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(f):
            raise TypeError(f"@tool needs a function, got {type(f).__name__}")
        setattr(f, _TOOL_ATTR, _ToolMark(name, description))
        return f

    return mark(fn) if fn is not None else mark


_ARGS_RE = re.compile(r"^\s*(Args|Arguments|Parameters)\s*:\s*$", re.IGNORECASE)
_SECTION_RE = re.compile(r"^\s*(Returns?|Raises|Yields|Examples?|Notes?)\s*:\s*$", re.IGNORECASE)
_PARAM_RE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Summary (text before the first section) and Google-style ``Args:`` descriptions."""
    summary: list[str] = []
    params: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    indent: int | None = None
    for line in doc.splitlines():
        if _ARGS_RE.match(line):
            section, current, indent = "args", None, None
            continue
        if _SECTION_RE.match(line):
            section, current = "other", None
            continue
        if section == "summary":
            summary.append(line)
            continue
        if section != "args" or not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        m = _PARAM_RE.match(line)
        if m and (indent is None or depth <= indent):
            indent = depth
            current = m.group(1).lstrip("*")
            params[current] = m.group(3).strip()
        elif current is not None:
            params[current] = (params[current] + " " + line.strip()).strip()
    return "\n".join(summary).strip(), params


def _build_spec(owner: type, method_name: str, fn: Callable[..., Any], mark: _ToolMark) -> ToolSpec:
    name = mark.name or fn.__name__
    where = f"{owner.__name__}.{method_name}"
    if name in RESERVED_TOOL_NAMES:
        raise TypeError(
            f"{where}: tool name {name!r} is reserved ({sorted(RESERVED_TOOL_NAMES)}); "
            "rename the method or pass @tool(name=...)"
        )
    summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise TypeError(f"{where}: cannot resolve type hints for tool {name!r}: {exc}") from exc
    fields: dict[str, Any] = {}
    params = list(inspect.signature(fn).parameters.values())[1:]  # drop self
    for p in params:
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TypeError(
                f"{where}: tool {name!r} may not take *args/**kwargs; list each argument"
            )
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(
                f"{where}: tool {name!r} argument {p.name!r} must not be positional-only"
            )
        if p.name not in hints:
            raise TypeError(f"{where}: tool {name!r} argument {p.name!r} needs a type hint")
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (hints[p.name], Field(default, description=arg_docs.get(p.name)))
    model = create_model(  # type: ignore[call-overload]
        f"{owner.__name__}_{name}_args", __config__=ConfigDict(extra="forbid"), **fields
    )
    schema = model.model_json_schema()
    schema.pop("title", None)
    description = mark.description if mark.description is not None else summary
    return ToolSpec(
        name=name,
        description=description,
        method_name=method_name,
        args_model=model,
        is_async=inspect.iscoroutinefunction(fn),
        tool=Tool(name=name, description=description, input_schema=schema),
    )


class MCPEnvironment(Environment[Action, Observation, Any]):
    """Base class for tool-calling envs. Decorate methods with ``@tool``; implement ``reset``.

    ``step`` answers ``ListToolsAction`` and ``CallToolAction``; any other action goes to
    :meth:`handle_action`. Override :meth:`on_tool_result` to set reward/done after a call.
    """

    _tools: dict[str, ToolSpec] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        tools: dict[str, ToolSpec] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                mark = getattr(value, _TOOL_ATTR, None)
                if isinstance(mark, _ToolMark):
                    spec = _build_spec(cls, attr, value, mark)
                    for other in list(tools.values()):  # an override replaces its parent's tool
                        if other.method_name == attr:
                            del tools[other.name]
                    if spec.name in tools and tools[spec.name].method_name != attr:
                        raise TypeError(
                            f"{cls.__name__}: two methods define tool {spec.name!r} "
                            f"({tools[spec.name].method_name} and {attr})"
                        )
                    tools[spec.name] = spec
        cls._tools = tools

    # ---- tool API -------------------------------------------------------------------------

    @classmethod
    def tool_specs(cls) -> dict[str, ToolSpec]:
        return dict(cls._tools)

    def list_tools(self) -> list[Tool]:
        """The tools this env offers, as MCP ``Tool`` records."""
        return [spec.tool for spec in self._tools.values()]

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None
    ) -> CallToolObservation:
        """Validate arguments and run one tool; errors come back inside the observation."""
        spec = self._tools.get(name)
        if spec is None:  # the name is the client's input: echo a bounded prefix only
            known = ", ".join(sorted(self._tools)) or "none"
            shown = bounded_text(str(name))
            return self._tool_error(
                shown,
                ToolErrorType.TOOL_NOT_FOUND,
                f"Unknown tool {shown!r}; available tools: {known}",
            )
        try:
            parsed = spec.args_model.model_validate(arguments or {})
        except ValidationError as exc:
            errs = [{"loc": e["loc"], "msg": e["msg"]} for e in exc.errors()]
            return self._tool_error(
                name,
                ToolErrorType.INVALID_ARGS,
                f"Invalid arguments for tool {name!r}: {describe_errors(errs)}",
            )
        kwargs = {k: getattr(parsed, k) for k in spec.args_model.model_fields}
        method = getattr(self, spec.method_name)
        try:
            if spec.is_async:
                result = await method(**kwargs)
            else:
                result = await run_sync(method, **kwargs)
        except Exception as exc:
            return self._tool_error(
                name,
                ToolErrorType.EXECUTION_ERROR,
                bounded_text(f"{type(exc).__name__}: {exc}", 2000),
            )
        if isinstance(result, CallToolObservation):
            return result
        obs = CallToolObservation(tool_name=name, result=result)
        hook = self.on_tool_result
        if getattr(hook, "__func__", None) is MCPEnvironment.on_tool_result:
            return obs
        if inspect.iscoroutinefunction(hook):
            return await hook(obs)
        if self.inline_sync_calls:  # the env vouched that its sync code is quick
            out = hook(obs)
        else:  # sync env code never runs on the event loop
            out = await run_sync(hook, obs)
        if inspect.isawaitable(out):
            out = await out
        return out

    @staticmethod
    def _tool_error(name: str, kind: ToolErrorType, message: str) -> CallToolObservation:
        return CallToolObservation(
            tool_name=name, error=ToolError(error_type=kind, message=message)
        )

    def on_tool_result(self, observation: CallToolObservation) -> CallToolObservation:
        """Hook after a successful tool call: set ``reward``/``done`` here. Default: unchanged.

        May be ``async def``; a plain method runs in a worker thread like other sync env code.
        """
        return observation

    # ---- Environment API ------------------------------------------------------------------

    async def step(self, action: Action, **kwargs: Any) -> Observation:  # type: ignore[override]
        if isinstance(action, ListToolsAction):
            return ListToolsObservation(tools=self.list_tools())
        if isinstance(action, CallToolAction):
            return await self.call_tool(action.tool_name, action.arguments)
        fn = self.handle_action
        if inspect.iscoroutinefunction(fn):
            return await fn(action, **kwargs)
        return await run_sync(fn, action, **kwargs)

    def handle_action(self, action: Action, **kwargs: Any) -> Observation:
        """Hook for actions other than ListToolsAction/CallToolAction. Default: refuse."""
        raise TypeError(
            f"{type(self).__name__} takes ListToolsAction or CallToolAction, got "
            f"{type(action).__name__}; override handle_action() to accept other actions"
        )
