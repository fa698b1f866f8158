"""``@tool``: plain methods (or functions) as MCP tools, with schemas built once from signatures.

The name comes from the function, the description from its docstring, the input schema from its
signature and type hints (a pydantic model per tool). A bad tool (reserved name, missing type
hint) fails when it is declared, not at the first call, with ``ValueError`` as in OpenEnv.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..core.mcp_types import RESERVED_TOOL_NAMES, Tool

TOOL_ATTR = "__openenv_tool__"


@dataclass(frozen=True)
class ToolMark:
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
        setattr(f, TOOL_ATTR, ToolMark(name, description))
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


def build_spec(
    owner: type, method_name: str, fn: Callable[..., Any], mark: ToolMark, *, bound: bool = True
) -> ToolSpec:
    """The tool ``fn`` declares; ``bound``: its first parameter is ``self`` (a method)."""
    name = mark.name or fn.__name__
    where = f"{owner.__name__}.{method_name}"
    if name in RESERVED_TOOL_NAMES:
        raise ValueError(
            f"{where}: tool name {name!r} is reserved ({sorted(RESERVED_TOOL_NAMES)}); "
            "rename the method or pass @tool(name=...)"
        )
    summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise TypeError(f"{where}: cannot resolve type hints for tool {name!r}: {exc}") from exc
    fields: dict[str, Any] = {}
    params = list(inspect.signature(fn).parameters.values())[1 if bound else 0 :]
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
