"""Every key of a recipe's config, as a Markdown table built from its pydantic schema.

``openenv-train config-keys RECIPE`` prints it; the tables of docs/reference/config-keys.md are
this output (a test compares them, so a key added to a config class cannot go undocumented). A
key's description is its ``Field(description=...)``, else the ``#:`` / ``#`` comment lines just
above it in the class body, else the comment at the end of its line: the config classes document
themselves where the key is declared, with no second list to keep in step. A recipe's subclass
that only changes a default keeps the shared section's description
(``openenv_train.training.config``).
"""

from __future__ import annotations

import ast
import inspect
import io
import json
import re
import textwrap
import tokenize
import types
import typing
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined


@dataclass(frozen=True)
class ConfigKey:
    """One row of the table: the dotted YAML key, its type (with bounds), default, description."""

    key: str
    type: str
    default: str
    description: str


def type_name(annotation: Any) -> str:
    """``int``, ``str | None``, ``list[str]``, ``"all" | "answers"`` for a field's annotation."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(json.dumps(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin is not None:
        inner = ", ".join(type_name(a) for a in args)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def bounds(field: FieldInfo) -> str:
    """``>= 1``, ``> 0, <= 1`` from the field's ``ge``/``gt``/``le``/``lt`` constraints."""
    signs = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
    out = []
    for meta in field.metadata:
        for attr, sign in signs.items():
            value = getattr(meta, attr, None)
            if value is not None:
                out.append(f"{sign} {value}")
    return ", ".join(out)


def default_text(field: FieldInfo) -> str:
    """The default as YAML would spell it (``null``, ``[]``, ``3e-3``); ``required`` if none."""
    if field.default is not PydanticUndefined:
        value = field.default
    elif field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    else:
        return "required"
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return json.dumps(value, default=str)


@cache
def _comments(cls: type) -> dict[str, str]:
    """``{field name: its comment}`` read from ``cls``'s source (above the field, else trailing)."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    by_line: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            by_line[tok.start[0]] = tok.string.lstrip("#:").strip()
    found: dict[str, str] = {}
    [class_def] = ast.parse(source).body
    assert isinstance(class_def, ast.ClassDef), class_def  # inspect.getsource of a class
    for node in class_def.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        above, line = [], node.lineno - 1
        while line >= 1 and line in by_line and lines[line - 1].lstrip().startswith("#"):
            above.insert(0, by_line[line])
            line -= 1
        span = range(node.lineno, (node.end_lineno or node.lineno) + 1)
        trailing = [by_line[n] for n in span if n in by_line]
        text = " ".join(above) or " ".join(t for t in trailing if t)
        if text:
            found[node.target.id] = text
    return found


def _description(model: type[BaseModel], name: str, field: FieldInfo) -> str:
    if field.description:
        return " ".join(field.description.split())
    for cls in model.__mro__:  # the nearest class that declares the field and says what it is
        if name in getattr(cls, "__annotations__", {}) and _comments(cls).get(name):
            return _comments(cls)[name]
    return ""


def _section(field: FieldInfo) -> type[BaseModel] | None:
    ann = field.annotation
    return ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None


def config_keys(model: type[BaseModel], prefix: str = "") -> list[ConfigKey]:
    """Every leaf key of ``model``, sections flattened to dotted keys (``grpo.max_steps``)."""
    rows: list[ConfigKey] = []
    for name, field in model.model_fields.items():
        key = prefix + name
        section = _section(field)
        if section is not None:
            rows += config_keys(section, key + ".")
            continue
        kind = type_name(field.annotation)
        limit = bounds(field)
        rows.append(
            ConfigKey(
                key=key,
                type=f"{kind} ({limit})" if limit else kind,
                default=default_text(field),
                description=_description(model, name, field),
            )
        )
    return rows


def _cell(text: str) -> str:
    return text.replace("``", "`").replace("|", "\\|")


def markdown_table(model: type[BaseModel]) -> str:
    """The Markdown table of ``model``'s keys (one line per key)."""
    out = ["| key | type | default | description |", "|---|---|---|---|"]
    for k in config_keys(model):
        cells = (f"`{k.key}`", f"`{_cell(k.type)}`", f"`{_cell(k.default)}`", _cell(k.description))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def undocumented(model: type[BaseModel]) -> list[str]:
    """Keys that have no description yet (a test keeps this empty for the shipped recipes)."""
    return [k.key for k in config_keys(model) if not k.description]


#: ``<!-- config-keys: RECIPE -->`` ... ``<!-- /config-keys -->`` in a docs page holds RECIPE's table
BLOCK = re.compile(
    r"(<!-- config-keys: (?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /config-keys -->)", re.S
)


def fill_tables(text: str, table_of: typing.Callable[[str], str]) -> str:
    """``text`` with every marked block's body replaced by ``table_of(recipe name)``."""
    return BLOCK.sub(lambda m: m.group(1) + table_of(m.group("name")) + m.group(4), text)
