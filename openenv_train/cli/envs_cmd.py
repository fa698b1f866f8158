"""``openenv-train envs``: list the installed envs (catalog entry points) with their schemas.

openenv-train envs              a table: name, description, app, action and observation fields
openenv-train envs NAME         one env (reasoning_gym/leg_counting: a member of a family)
openenv-train envs --family F   the envs of one family (reasoning_gym, textarena, verifiers)
openenv-train envs --json       the same with full JSON schemas, for scripts
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..catalog import (
    BrokenEnvEntryError,
    UnknownEnvError,
    describe,
    env_names,
    missing_env_packages,
)

_BASE_FIELDS = frozenset({"metadata", "done", "reward"})


def _type_of(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return "|".join(_type_of(o) for o in options)
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list[{_type_of(schema.get('items') or {})}]"
    return str(kind)


def fields_summary(schema: dict[str, Any]) -> str:
    """``guess: integer, ...`` from a model's JSON schema (base fields left out; * = required)."""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = [
        f"{name}{'*' if name in required else ''}: {_type_of(p)}"
        for name, p in props.items()
        if name not in _BASE_FIELDS
    ]
    return ", ".join(parts) or "(none)"


def _fail(message: str) -> int:
    print(f"openenv-train envs: error: {message}", file=sys.stderr)
    return 2


def cmd_envs(args: argparse.Namespace) -> int:
    try:
        names = [args.name] if args.name else env_names(args.family)
    except (UnknownEnvError, BrokenEnvEntryError) as err:
        return _fail(str(err))
    rows = []
    for name in names:
        try:
            rows.append(describe(name))
        except UnknownEnvError as err:
            return _fail(str(err))
        except BrokenEnvEntryError as err:
            if args.name:
                return _fail(str(err))
            rows.append({"name": name, "error": str(err)})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from rich.console import Console

    console = Console()
    if console.width < WIDE:
        print(narrow_listing(rows, console.width))
    else:
        console.print(wide_table(rows))
    missing = missing_env_packages()
    if missing:
        print(f"not installed: {', '.join(missing)}")
    if missing or not rows:
        print(
            "add the example envs: pip install 'openenv-train[envs]' (or one: pip install "
            f"{(missing or ['openenv-train-echo-env'])[0]}); your own: openenv-train init NAME"
        )
    return 0


#: below this many columns five table columns fold every cell into slivers: one block per env
WIDE = 140


def narrow_listing(rows: list[dict[str, Any]], width: int) -> str:
    """One block per env: its name and description, then app, action and observation on
    lines of their own, wrapped at ``width`` and indented (readable at 80 columns)."""
    import textwrap

    blocks = [f"installed envs ({len(rows)})"]
    for r in rows:
        if "error" in r:
            blocks.append(textwrap.fill(f"{r['name']}  error: {r['error']}", width))
            continue
        lines = textwrap.wrap(f"{r['name']}  {r['description']}", width, subsequent_indent="    ")
        for label, text in (
            ("app", r["app"]),
            ("action", fields_summary(r["action"])),
            ("observation", fields_summary(r["observation"])),
        ):
            lines += textwrap.wrap(
                text,
                width,
                initial_indent=f"  {label:<12} ",
                subsequent_indent=" " * 15,
                break_long_words=False,
                break_on_hyphens=False,
            )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def wide_table(rows: list[dict[str, Any]]) -> Any:
    """The five-column table of a wide terminal."""
    from rich.table import Table

    table = Table(title=f"installed envs ({len(rows)})", show_lines=True)
    for col in ("name", "description", "app", "action", "observation"):
        table.add_column(col, overflow="fold")
    for r in rows:
        if "error" in r:
            table.add_row(r["name"], f"[red]{r['error']}[/]", "", "", "")
            continue
        table.add_row(
            r["name"],
            r["description"],
            r["app"],
            fields_summary(r["action"]),
            fields_summary(r["observation"]),
        )
    return table


def register(sub: Any) -> None:
    """Add the ``envs`` subcommand to the ``openenv-train`` parser."""
    p = sub.add_parser("envs", help="list installed envs with their action/observation schema")
    p.add_argument("name", nargs="?", default=None, help="show one env (e.g. blackjack)")
    p.add_argument(
        "--family", default=None, help="only the envs of this family (e.g. reasoning_gym)"
    )
    p.add_argument("--json", action="store_true", help="print JSON with the full schemas")
    p.set_defaults(func=cmd_envs)
