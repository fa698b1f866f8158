"""The compatibility layer ``openenv_train.openenv``: OpenEnv's names, lazily exported from its
own modules, and no native module imports it (it sits at the top of the import layers)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import openenv_train.openenv as layer

ROOT = Path(__file__).resolve().parents[2]
NATIVE = [ROOT / "openenv_train", ROOT / "recipes"]


def exported() -> list[tuple[str, str]]:
    return sorted((name, module) for name, module in layer._HOME.items())


@pytest.mark.parametrize(("name", "module"), exported())
def test_every_name_is_its_modules_object(name: str, module: str) -> None:
    full = f"openenv_train.openenv.{module}"
    assert getattr(layer, name) is getattr(importlib.import_module(full), name)
    assert name in layer.__all__ and name in dir(layer)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        layer.Nope  # noqa: B018


def test_one_name_loads_only_its_own_module() -> None:
    probe = (
        "import sys\nfrom openenv_train.openenv import EvalConfig\n"
        "print(' '.join(m for m in sys.modules if m.startswith('openenv_train.openenv.')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["openenv_train.openenv.evals"]


def imports_of_the_layer(path: Path) -> list[str]:
    bad = []
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        if any(
            n == "openenv_train.openenv" or n.startswith("openenv_train.openenv.") for n in names
        ):
            bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return bad


def test_no_native_module_imports_the_layer() -> None:
    files = [p for top in NATIVE for p in sorted(top.rglob("*.py"))]
    files = [p for p in files if "openenv" not in p.relative_to(ROOT).parts[1:2]]
    assert len(files) > 100
    bad = [hit for path in files for hit in imports_of_the_layer(path)]
    assert not bad, "native modules must not import openenv_train.openenv:\n" + "\n".join(bad)


def test_the_checker_sees_a_lazy_relative_import() -> None:
    probe = ROOT / "openenv_train" / "training" / "_layer_probe.py"
    probe.write_text("def f():\n    from ..openenv.evals import EvalConfig\n")
    try:
        assert imports_of_the_layer(probe) == ["openenv_train/training/_layer_probe.py:2"]
    finally:
        probe.unlink()
