"""Loading a recipe config: YAML -> the schema (``config.py``) -> one error format.

Every mistake fails at load with a :class:`ConfigError` that names the YAML key
(``grpo.num_generations``) and the fix; an unknown key is named with the nearest known one.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from .checks import ConfigError
from .config import RunConfig

__all__ = ["ConfigError", "format_errors", "load_config", "nearest_key", "parse_config"]

ConfigT = TypeVar("ConfigT", bound=RunConfig)


def _keys(model: Any, prefix: str = "") -> list[str]:
    """Every dotted key of a config schema (sections and their keys)."""
    out: list[str] = []
    for name, field in getattr(model, "model_fields", {}).items():
        out.append(prefix + name)
        if hasattr(field.annotation, "model_fields"):
            out += _keys(field.annotation, f"{prefix}{name}.")
    return out


def nearest_key(schema: type[BaseModel] | None, loc: tuple[Any, ...]) -> str | None:
    """The known key closest in spelling to the unknown one at ``loc``: in its own section
    (``grpo.learning_rate`` for ``grpo.learnig_rate``), else anywhere (``grpo.max_steps`` for a
    top-level ``max_step``); None when nothing is close."""
    section = ".".join(map(str, loc[:-1]))
    keys = _keys(schema)
    siblings = {k.rpartition(".")[2]: k for k in keys if k.rpartition(".")[0] == section}
    close = difflib.get_close_matches(str(loc[-1]), list(siblings), n=1, cutoff=0.6)
    if close:
        return siblings[close[0]]
    leaves: dict[str, str] = {}
    for k in keys:
        leaves.setdefault(k.rpartition(".")[2], k)
    close = difflib.get_close_matches(str(loc[-1]), list(leaves), n=1, cutoff=0.8)
    return leaves[close[0]] if close else None


def example_hint(example: str) -> str:
    """Where to read the example config in any install: its shipped name, not a clone's path
    (``configs/x.yaml`` -> ``openenv-train configs x``, which prints it; ``--copy .`` copies)."""
    name = Path(example).stem
    return f"`openenv-train configs {name}` prints the example; `--copy .` copies it"


def format_errors(err: ValidationError, example: str, schema: type[BaseModel] | None = None) -> str:
    """One line per wrong key: the dotted key, what is wrong and the fix."""
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"])
        if e["type"] == "extra_forbidden":
            near = nearest_key(schema, tuple(e["loc"]))
            hint = f"did you mean `{near}`? " if near else ""
            lines.append(
                f"{key}: unknown key; {hint}remove it or check its spelling "
                f"({example_hint(example)})"
            )
            continue
        msg = e["msg"].removeprefix("Value error, ")
        lines.append(msg if not key or msg.startswith(key.split(".")[0]) else f"{key}: {msg}")
    return "invalid recipe config:\n  " + "\n  ".join(lines)


def parse_config(data: Any, schema: type[ConfigT]) -> ConfigT:
    """A checked ``schema`` config from a dict; raises :class:`ConfigError` naming the key.

    Validation, then ``cfg.check_start()`` (what the config names imports here). Nothing here
    reaches a server or looks for a model folder: ``checks.start_checks`` does that when the run
    starts (``lifecycle.open_run``)."""
    if not isinstance(data, dict):
        raise ConfigError(f"a recipe config must be a YAML mapping, got {type(data).__name__}")
    try:
        cfg = schema.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_errors(err, schema.example, schema)) from None
    try:
        cfg.check_start()
    except ConfigError:
        raise
    except ValueError as err:
        raise ConfigError(str(err)) from None
    return cfg


def load_config(path: str | Path, schema: type[ConfigT]) -> ConfigT:
    """Load and check a YAML config (``parse_config``); a relative ``model.path`` resolves
    against the working directory when the run starts."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(
            f"config file {str(path)!r} does not exist; pass a YAML file "
            f"({example_hint(schema.example)})"
        )
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as err:
        raise ConfigError(f"{p}: not valid YAML: {err}") from None
    cfg = parse_config({} if data is None else data, schema)
    cfg.given_as(str(p))
    return cfg
