"""``openenv-train train --set a.b=c`` overrides, and the check that ``--resume`` continues the
run its folder was started with (``config.json``) rather than a silently different one."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import yaml

from .errors import OverrideError as OverrideError

#: Keys a resume may change: how long to go on, where and how to report. Any other change
#: (learning rate, model, env) would make the continued run a different experiment.
RESUMABLE_CHANGES = frozenset(
    {
        "grpo.max_steps",
        "steps",
        "trainer.max_steps",
        "resume",
        "progress",
        "report_to",
        "name",
        "output_dir",
    }
)


FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def apply_overrides(data: dict[str, Any], sets: list[str]) -> dict[str, Any]:
    """A copy of ``data`` with each ``a.b=c`` set; ``c`` is read as YAML (``1e-4``, ``true``,
    ``[x, y]``, ``null``). The recipe's schema checks the result, naming unknown keys."""
    out = copy.deepcopy(data)
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or any(not p for p in key.strip().split(".")):
            raise OverrideError(
                f"--set: {item!r} is not KEY=VALUE; write e.g. --set grpo.learning_rate=1e-4"
            )
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError as err:
            raise OverrideError(f"--set {key}: {value!r} is not a YAML value: {err}") from None
        if isinstance(parsed, str) and FLOAT.fullmatch(parsed):
            parsed = float(parsed)  # YAML 1.1 reads 1e-4 (no dot) as a string
        parts = key.strip().split(".")
        node = out
        for i, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                above = ".".join(parts[: i + 1])
                raise OverrideError(f"--set {key}: {above} is a value, not a section")
            node = child
        node[parts[-1]] = parsed
    return out


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"grpo.learning_rate": 5e-4, ...}``: the leaves of nested mappings by dotted key."""
    if not isinstance(data, dict) or not data:
        return {prefix: data} if prefix else {}
    out: dict[str, Any] = {}
    for k, v in data.items():
        out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def changed_keys(before: dict[str, Any], after: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Dotted key -> (before, after) for every leaf that differs (a missing leaf is None)."""
    a, b = flatten(before), flatten(after)
    return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


def check_resume_config(cfg: Any, force: bool = False) -> None:
    """``--resume``: refuse a config that differs from the run folder's ``config.json`` in keys
    a resume may not change (listed with both values), unless ``force``."""
    saved = Path(cfg.output_dir) / cfg.name / "config.json"
    if force or not saved.is_file() or not hasattr(cfg, "model_dump"):
        return
    changes = {
        k: v
        for k, v in changed_keys(json.loads(saved.read_text()), cfg.model_dump(mode="json")).items()
        if k not in RESUMABLE_CHANGES
    }
    if changes:
        lines = "\n  ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in changes.items())
        raise OverrideError(
            f"--resume: the config differs from the one {saved.parent} was started with "
            f"({saved}):\n  {lines}\nput those keys back, train under a new --name, or pass "
            "--force-resume to continue with the new values"
        )
