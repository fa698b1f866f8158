"""MCP tool descriptions in the function-calling shapes models take (OpenAI, Anthropic).

One place for the conversion: the LLM clients, the harness's chat-template prompts and the
ReAct agent all describe tools with it. Stdlib only, so importing it costs nothing.
"""

from __future__ import annotations

from typing import Any

__all__ = ["tool_input_schema", "tools_to_anthropic", "tools_to_openai"]


def _empty_object() -> dict[str, Any]:
    return {"type": "object", "properties": {}, "required": []}


def _object_option(options: Any) -> dict[str, Any]:
    """The first object-typed alternative of a ``oneOf``/``anyOf``, or an empty object."""
    for option in options if isinstance(options, list) else []:
        if isinstance(option, dict) and option.get("type") == "object":
            return option
    return _empty_object()


def tool_input_schema(schema: Any) -> dict[str, Any]:
    """An MCP tool's ``inputSchema`` as function-calling APIs take it: an object schema.

    ``oneOf``/``anyOf`` become their first object alternative, ``allOf`` parts are merged, and
    ``type``/``properties`` are filled in. The caller's dict is never changed.
    """
    if not isinstance(schema, dict):
        return _empty_object()
    if "oneOf" in schema:
        schema = _object_option(schema["oneOf"])
    if "allOf" in schema:
        merged = _empty_object()
        for part in schema["allOf"]:
            if isinstance(part, dict):
                merged["properties"].update(part.get("properties", {}))
                merged["required"].extend(part.get("required", []))
        schema = merged
    if "anyOf" in schema:
        schema = _object_option(schema["anyOf"])
    schema = dict(schema)
    schema.setdefault("type", "object")
    if schema["type"] == "object":
        schema.setdefault("properties", {})
    return schema


def _tool_fields(tool: Any) -> tuple[str, str, Any]:
    """(name, description, input schema) of an MCP tool dict, our ``Tool`` or an MCP SDK tool."""
    if isinstance(tool, dict):
        schema = tool.get("inputSchema", tool.get("input_schema"))
        return tool["name"], tool.get("description") or "", schema or _empty_object()
    schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None)
    return tool.name, getattr(tool, "description", None) or "", schema or _empty_object()


def tools_to_openai(tools: list[Any]) -> list[dict[str, Any]]:
    """MCP tools as OpenAI ``tools=`` entries (``{"type": "function", "function": {...}}``)."""
    out = []
    for tool in tools:
        name, description, schema = _tool_fields(tool)
        out.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": description,
                    "parameters": tool_input_schema(schema),
                },
            }
        )
    return out


def tools_to_anthropic(tools: list[Any]) -> list[dict[str, Any]]:
    """MCP tools as Anthropic ``tools=`` entries (``name``, ``description``, ``input_schema``)."""
    out = []
    for tool in tools:
        name, description, schema = _tool_fields(tool)
        out.append(
            {"name": name, "description": description, "input_schema": tool_input_schema(schema)}
        )
    return out
