"""The one loopback list: every caller (serve's token rule, quotas, the client, container
checks, the Ray fleet, the policy endpoint) asks ``core.loopback.is_loopback``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from openenv_train.core.loopback import is_loopback

PACKAGE = Path(__file__).resolve().parents[2] / "openenv_train"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.4.5", "localhost", "::1", "[::1]"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "10.0.0.1", "::", "example.org", "", None, "1127.0.0.1"]
)
def test_other_hosts(host: str | None) -> None:
    assert not is_loopback(host)


def test_no_other_module_spells_the_loopback_names() -> None:
    """A second list drifts (three did, each a little different): only core/loopback.py names
    ``::1`` or ``localhost`` in a set, tuple or comparison."""
    bad = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "loopback.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
                values = {e.value for e in node.elts if isinstance(e, ast.Constant)}
                if {"::1", "localhost"} & values and "127.0.0.1" in values:
                    bad.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not bad, "use openenv_train.core.loopback.is_loopback:\n" + "\n".join(bad)
