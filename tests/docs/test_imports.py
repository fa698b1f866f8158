"""The architecture page's claims (docs/concepts/architecture.md), checked on the source: imports go one way, the light core
needs no training stack, and the CLI reaches recipes only through their public interface.

Every import is read with ``ast`` (module level and inside functions, relative ones resolved,
``importlib.import_module("...")`` literals included), so a lazy import cannot hide an upward one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from docs_support import load_script

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "openenv_train"
HEAVY = {"torch", "transformers", "trl", "datasets", "vllm", "accelerate"}


ARCHITECTURE = ROOT / "docs" / "concepts" / "architecture.md"


def documented_layers() -> list[list[str]]:
    """``core <- server, client <- ...`` from the architecture page: lowest layer first.

    Read by the same function that draws the page's picture (scripts/docs_gen.py).
    """
    return load_script("docs_gen").import_layers(ARCHITECTURE)


def imports_of(path: Path, module: str) -> list[tuple[int, str, list[str]]]:
    """``(line, imported module, names)`` for every import in the file."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            out.append((node.lineno, base, [a.name for a in node.names]))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append((node.lineno, node.args[0].value, []))
    return out


def sources(top: Path, name: str) -> list[tuple[Path, str]]:
    files = []
    for path in sorted(top.rglob("*.py")):
        rel = path.relative_to(top.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        files.append((path, ".".join(parts)))
    return files


def layer_of(layers: list[list[str]], package: str) -> int | None:
    for i, layer in enumerate(layers):
        if package in layer:
            return i
    return None


def violations(layers: list[list[str]], path: Path, module: str) -> list[str]:
    """Imports of ``module`` that reach a package in its own layer or above."""
    own = module.split(".")[1] if module.startswith("openenv_train.") else module.split(".")[0]
    mine = layer_of(layers, own)
    if mine is None:
        return []
    bad = []
    for line, target, _names in imports_of(path, module):
        parts = target.split(".")
        if parts[0] == "openenv_train" and len(parts) > 1:
            other = parts[1]
        elif parts[0] == "recipes":
            other = "recipes"
        else:
            continue
        theirs = layer_of(layers, other)
        if other != own and theirs is not None and theirs >= mine:
            bad.append(f"{path}:{line}: {own} imports {target} ({other})")
    return bad


def test_the_page_names_every_package_once() -> None:
    layers = documented_layers()
    named = [p for layer in layers for p in layer]
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert len(named) == len(set(named))
    assert sorted(named) == packages  # recipes/ is linked in as openenv_train.recipes


def test_imports_go_one_way_as_the_docs_say() -> None:
    layers = documented_layers()
    files = sources(PACKAGE, "openenv_train") + sources(ROOT / "recipes", "recipes")
    bad = [v for path, module in files for v in violations(layers, path, module)]
    assert not bad, "imports against the architecture page's direction:\n" + "\n".join(bad)


def test_the_checker_catches_an_upward_import(tmp_path: Path) -> None:
    layers = documented_layers()
    lazy = tmp_path / "engine.py"
    lazy.write_text("def f():\n    from ..harness import runner\n")
    assert violations(layers, lazy, "openenv_train.rollout.engine")
    same_layer = tmp_path / "main.py"
    same_layer.write_text(
        "import importlib\nimportlib.import_module('openenv_train.recipes.x.train')\n"
    )
    assert violations(layers, same_layer, "openenv_train.cli.main")
    down = tmp_path / "ok.py"
    down.write_text("from ..rollout.engine import RolloutEngine\n")
    assert not violations(layers, down, "openenv_train.training.ok")


@pytest.mark.parametrize("package", ["core", "server", "client", "runtime", "judge"])
def test_the_light_core_needs_no_training_stack(package: str) -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line}: {target}"
        for path, module in sources(PACKAGE / package, f"openenv_train.{package}")
        for line, target, _ in imports_of(path, module)
        if target.split(".")[0] in HEAVY
    ]
    assert not bad, "the core must install and import without the train extra:\n" + "\n".join(bad)


def test_cli_uses_only_public_names_and_never_edits_the_import_path() -> None:
    bad = []
    for path, module in sources(PACKAGE / "cli", "openenv_train.cli"):
        tree = ast.parse(path.read_text())
        for line, target, names in imports_of(path, module):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private or any(p.startswith("_") and p != "__future__" for p in target.split(".")):
                bad.append(f"{path.name}:{line}: imports private {target} {private}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                if node.attr in ("path", "modules") and getattr(node.value, "id", "") == "sys":
                    bad.append(f"{path.name}:{node.lineno}: touches sys.{node.attr}")
                elif (
                    node.attr.startswith("_")
                    and not node.attr.startswith("__")
                    and getattr(node.value, "id", "") != "self"  # its own internals
                ):
                    bad.append(f"{path.name}:{node.lineno}: uses private .{node.attr}")
    assert not bad, "\n".join(bad)


#: third-party packages the ground layer may import: the protocol models are pydantic
GROUND_THIRD_PARTY = {"pydantic", "pydantic_core", "typing_extensions"}
#: standard-library modules that do I/O over a network, a process or a container
GROUND_FORBIDDEN_STDLIB = {
    "socket",
    "ssl",
    "http",
    "urllib",
    "subprocess",
    "multiprocessing",
    "ftplib",
    "smtplib",
    "xmlrpc",
}


def ground_layer_violations(path: Path, module: str) -> list[str]:
    """Imports in ``path`` of a third-party library or an I/O module of the standard library."""
    import sys

    bad = []
    for line, target, _ in imports_of(path, module):
        top = target.split(".")[0]
        if not top or top == "openenv_train":
            continue
        if top in GROUND_FORBIDDEN_STDLIB or (
            top not in sys.stdlib_module_names and top not in GROUND_THIRD_PARTY
        ):
            bad.append(f"{path.name}:{line}: {target}")
    return bad


def test_the_ground_layer_imports_no_network_sdk_or_container_library() -> None:
    bad = [
        v
        for path, module in sources(PACKAGE, "openenv_train")
        if module == "openenv_train.core" or module.startswith("openenv_train.core.")
        for v in ground_layer_violations(path, module)
    ]
    assert not bad, "openenv_train.core must stay free of I/O libraries:\n" + "\n".join(bad)


def test_the_ground_layer_checker_catches_an_sdk_import(tmp_path: Path) -> None:
    lazy = tmp_path / "client.py"
    lazy.write_text("def f():\n    import openai\n    import subprocess\n    import json\n")
    found = ground_layer_violations(lazy, "openenv_train.core.client")
    assert [v.rsplit(": ", 1)[1] for v in found] == ["openai", "subprocess"]


def compat_imports(path: Path, module: str) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{line}: {target}"
        for line, target, _ in imports_of(path, module)
        if target == "openenv_train.openenv" or target.startswith("openenv_train.openenv.")
    ]


def test_no_native_module_imports_the_openenv_compatibility_layer() -> None:
    """``openenv_train.openenv`` maps OpenEnv's API onto ours; ours never leans on it."""
    files = sources(PACKAGE, "openenv_train") + sources(ROOT / "recipes", "recipes")
    native = [(p, m) for p, m in files if not m.startswith("openenv_train.openenv")]
    bad = [v for path, module in native for v in compat_imports(path, module)]
    assert not bad, "native code importing the compatibility layer:\n" + "\n".join(bad)


#: file names every package may have, for the same job in each
SHARED_FILE_NAMES = {"__init__.py", "__main__.py", "errors.py"}


def shared_file_names(top: Path) -> dict[str, list[str]]:
    """Library module file names that two or more modules share (doing different jobs)."""
    seen: dict[str, list[str]] = {}
    for path in sorted(top.rglob("*.py")):
        if path.name not in SHARED_FILE_NAMES and "recipes" not in path.relative_to(top).parts:
            seen.setdefault(path.name, []).append(str(path.relative_to(top)))
    return {name: paths for name, paths in seen.items() if len(paths) > 1}


def test_no_two_library_modules_share_a_file_name(tmp_path: Path) -> None:
    """``runner.py`` three times, ``mcp.py`` three times...: a name must say which job it is."""
    assert not shared_file_names(PACKAGE)
    for package in ("a", "b"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "runner.py").write_text("")
        (tmp_path / package / "errors.py").write_text("")
    assert list(shared_file_names(tmp_path)) == ["runner.py"]
