"""Each package keeps its exceptions in one module, ``errors.py`` (issue 33): a reader finds every
exception a layer raises in one place, and the module that raises one imports it from there.
``catalog.py``, a single-module top-level file, is the one exception to the rule.

The check reads the source with ``ast`` (nothing is imported): a class is an exception when one
of its bases is a built-in exception or, followed through the library's imports and re-exports,
another exception class of the library.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from pathlib import Path

import openenv_train

PACKAGE = Path(openenv_train.__file__).parent
#: Single-module top-level files that may keep their own exceptions (relative to the package).
OWN_ERRORS = {"catalog.py"}
BUILTIN_EXCEPTIONS = {
    name
    for name in dir(builtins)
    if isinstance(getattr(builtins, name), type)
    and issubclass(getattr(builtins, name), BaseException)
}


@dataclass
class ClassInfo:
    module: str
    name: str
    path: Path
    line: int
    bases: list[ast.expr]


def module_name(root: Path, package: str, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module an ``from ... import`` in ``module`` names."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def exception_classes(root: Path, package: str) -> tuple[list[ClassInfo], list[ClassInfo]]:
    """Every class under ``root`` (the package ``package``), split into exceptions and the rest."""
    classes: dict[str, ClassInfo] = {}  # "module.Name" -> the class
    names: dict[str, dict[str, str]] = {}  # module -> local name -> what it refers to
    for path in sorted(root.rglob("*.py")):
        module = module_name(root, package, path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        local = names.setdefault(module, {})
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                info = ClassInfo(module, node.name, path, node.lineno, list(node.bases))
                classes.setdefault(f"{module}.{node.name}", info)
                local.setdefault(node.name, f"{module}.{node.name}")
            elif isinstance(node, ast.ImportFrom):
                source = absolute(module, path.name == "__init__.py", node)
                for alias in node.names:
                    local.setdefault(alias.asname or alias.name, f"{source}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        local.setdefault(alias.asname, alias.name)

    def resolve(target: str, seen: frozenset[str] = frozenset()) -> str:
        """Follow re-exports (``from .errors import X`` in a module others import X from)."""
        if target in classes or target in seen:
            return target
        module, _, name = target.rpartition(".")
        nxt = names.get(module, {}).get(name)
        return resolve(nxt, seen | {target}) if nxt and nxt != target else target

    def base_of(info: ClassInfo, base: ast.expr) -> str | None:
        local = names[info.module]
        if isinstance(base, ast.Name):
            if base.id in local:
                return resolve(local[base.id])
            return f"builtins.{base.id}" if base.id in BUILTIN_EXCEPTIONS else None
        if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
            owner = local.get(base.value.id)
            return resolve(f"{owner}.{base.attr}") if owner else None
        return None

    found: set[str] = set()

    def is_exception(base: str | None) -> bool:
        if base is None:
            return False
        if base.startswith("builtins."):
            return base.removeprefix("builtins.") in BUILTIN_EXCEPTIONS
        return base in found

    changed = True
    while changed:  # until no class gains an exception base: bases may be defined after users
        changed = False
        for key, info in classes.items():
            if key not in found and any(is_exception(base_of(info, b)) for b in info.bases):
                found.add(key)
                changed = True
    exceptions = [info for key, info in classes.items() if key in found]
    others = [info for key, info in classes.items() if key not in found]
    return exceptions, others


def misplaced(root: Path, package: str, own_errors: set[str] = OWN_ERRORS) -> list[str]:
    """The exceptions defined outside an ``errors.py`` (and the allowed single-module files)."""
    exceptions, _ = exception_classes(root, package)
    return [
        f"{info.path.relative_to(root)}:{info.line}: {info.name}"
        for info in exceptions
        if info.path.name != "errors.py" and str(info.path.relative_to(root)) not in own_errors
    ]


def test_every_exception_lives_in_its_packages_errors_module() -> None:
    bad = misplaced(PACKAGE, "openenv_train")
    assert not bad, (
        "define each exception in its package's errors.py and import it back where it is raised "
        "(`from .errors import X as X`):\n" + "\n".join(bad)
    )


def test_the_check_sees_the_library_exceptions() -> None:
    exceptions, _ = exception_classes(PACKAGE, "openenv_train")
    by_name = {info.name: info for info in exceptions}
    # through re-exports and several levels of library bases, private names included
    for name in ("SandboxTimeoutError", "QuotaError", "_Refusal", "ToolCallError", "ConfigError"):
        assert name in by_name, name
    assert len(exceptions) >= 60
    homes = {info.path.relative_to(PACKAGE).as_posix() for info in exceptions}
    assert "core/errors.py" in homes and "server/errors.py" in homes


def test_no_name_is_both_an_exception_and_another_class() -> None:
    """``JsonRpcError`` is the wire model; the client's exception is ``JsonRpcCallError``."""
    exceptions, others = exception_classes(PACKAGE, "openenv_train")
    both = {info.name for info in exceptions} & {info.name for info in others}
    assert not both, f"rename the exception or the class: {sorted(both)}"


def test_the_check_flags_an_exception_defined_elsewhere(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .errors import BaseErr as BaseErr\n")
    (pkg / "sub" / "errors.py").write_text("class BaseErr(Exception):\n    pass\n")
    (pkg / "sub" / "module.py").write_text(
        "from pydantic import BaseModel\n"
        "from . import errors as errs\n"
        "from ..sub import BaseErr\n\n"
        "class Derived(BaseErr):\n    pass\n\n"  # a library base, through a re-export
        "class ByAttribute(errs.BaseErr):\n    pass\n\n"
        "class _Private(KeyError):\n    pass\n\n"  # a built-in base
        "class Model(BaseModel):\n    pass\n"  # not an exception
    )
    (pkg / "catalog.py").write_text("class CatalogError(LookupError):\n    pass\n")
    bad = misplaced(pkg, "pkg", own_errors={"catalog.py"})
    assert bad == [
        "sub/module.py:5: Derived",
        "sub/module.py:8: ByAttribute",
        "sub/module.py:11: _Private",
    ]
    assert misplaced(pkg, "pkg", own_errors=set()) == ["catalog.py:1: CatalogError", *bad]


def test_the_errors_page_names_every_home_and_its_classes() -> None:
    page = (PACKAGE.parent / "docs" / "reference" / "errors.md").read_text()
    exceptions, _ = exception_classes(PACKAGE, "openenv_train")
    wanted = {f"`openenv_train/{info.path.relative_to(PACKAGE).as_posix()}`" for info in exceptions}
    wanted |= {f"`{info.name}`" for info in exceptions}
    missing = sorted(m for m in wanted if m not in page)
    assert not missing, f"docs/reference/errors.md, 'Where the exception classes live': {missing}"
