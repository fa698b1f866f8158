"""``openenv-train configs``: the example configs that ship with the package, found by name.

openenv-train configs                  every shipped config: name and the first line of its header
openenv-train configs NAME             print one
openenv-train configs NAME --copy DIR  write it to DIR/NAME.yaml, to edit and train with
openenv-train train NAME               train with a shipped config (``resolve_config``)

The configs are the repository's ``configs/*.yaml``; the wheel ships them inside the package
(``openenv_train/configs``, a link to ``configs/`` in a clone), so a name works the same after
``pip install openenv-train`` as in a clone, with no repository on disk.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .errors import UnknownConfigError as UnknownConfigError

SHIPPED = Path(__file__).parent.parent / "configs"


def shipped_configs() -> dict[str, Path]:
    """Every shipped config by name (the file name without ``.yaml``), sorted."""
    return {p.stem: p for p in sorted(SHIPPED.glob("*.yaml"))}


def summary(path: Path) -> str:
    """The first line of the config's header comment (what it is for), or ``""``."""
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip().rstrip(":")
        if line.strip():
            return ""
    return ""


def _unknown(given: str) -> UnknownConfigError:
    names = ", ".join(shipped_configs()) or "none"
    return UnknownConfigError(
        f"config: {given!r} does not exist (no such file, no shipped config of that name); "
        f"pass a path (e.g. configs/grpo_blackjack_cpu.yaml) or one of: {names} "
        "(openenv-train configs)"
    )


def resolve_config(given: str) -> Path:
    """The YAML file ``openenv-train train`` reads: ``given`` itself when that file exists,
    else the shipped config of that name (``grpo_blackjack_cpu`` or ``grpo_blackjack_cpu.yaml``)."""
    path = Path(given)
    if path.is_file():
        return path
    if path.parent in (Path("."), Path("configs")):  # a name, or the docs' configs/NAME.yaml
        found = shipped_configs().get(path.name.removesuffix(".yaml"))
        if found is not None:
            return found
    raise _unknown(given)


def cmd_configs(args: argparse.Namespace) -> int:
    if args.name is None:
        configs = shipped_configs()
        width = max(map(len, configs), default=0)
        for name, path in configs.items():
            print(f"{name:<{width}}  {summary(path)}")
        print(
            "train with one: openenv-train train NAME; edit one: openenv-train configs NAME --copy ."
        )
        return 0
    source = shipped_configs().get(args.name.removesuffix(".yaml"))
    if source is None:
        raise _unknown(args.name)
    if args.copy is None:
        sys.stdout.write(source.read_text())
        return 0
    folder = Path(args.copy)
    if not folder.is_dir():
        raise UnknownConfigError(f"--copy: {folder} is not a folder; pass an existing one (e.g. .)")
    dest = folder / source.name
    if dest.exists():
        raise UnknownConfigError(
            f"--copy: {dest} already exists and is kept; edit it, or copy into another folder"
        )
    dest.write_text(source.read_text())
    print(f"wrote {dest}; edit it, then: openenv-train train {dest}")
    return 0


def register(sub: Any) -> None:
    """Add the ``configs`` subcommand to the ``openenv-train`` parser."""
    p = sub.add_parser(
        "configs", help="the shipped example configs by name (openenv-train train NAME)"
    )
    p.add_argument("name", nargs="?", default=None, help="print one (e.g. grpo_blackjack_cpu)")
    p.add_argument(
        "--copy", default=None, metavar="DIR", help="write config NAME to DIR/NAME.yaml to edit"
    )
    p.set_defaults(func=cmd_configs)
