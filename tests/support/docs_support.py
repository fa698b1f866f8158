"""Helpers of the docs tests: the scripts that generate pages, and the pages' fenced blocks."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.M | re.S
)


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` as a module (the scripts folder is not a package)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def doc_pages() -> list[Path]:
    """The README, the changelog and every page of the site."""
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]


def fenced_blocks(path: Path) -> list[tuple[int, str, str]]:
    """``(line, language, code)`` of every fenced block of a Markdown file (indentation removed)."""
    text = path.read_text()
    out = []
    for m in FENCE.finditer(text):
        indent = len(m.group("indent"))
        body = "".join(line[indent:] for line in m.group("body").splitlines(keepends=True))
        out.append((text.count("\n", 0, m.start()) + 1, m.group("lang"), body))
    return out
