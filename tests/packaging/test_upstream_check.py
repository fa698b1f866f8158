"""scripts/upstream_check.py's verdicts, offline: the index is not asked here (the script itself
asks it); the ranges in pyproject.toml are checked against the releases the issue named."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location(
        "upstream_check", ROOT / "scripts" / "upstream_check.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


@pytest.mark.parametrize(
    ("where", "req", "newest", "status"),
    [
        ("[train]", "torch>=2.4,<=2.14.1", "2.15.0", "EXCLUDES-NEWEST"),
        ("[train]", "torch>=2.4", "2.15.0", "ok"),
        ("[train]", "trl==1.16.0", "1.16.0", "EXACT-PIN"),  # a pin fails even at the newest
        ("[dev]", "openenv==0.10.0", "0.10.0", "pin (dev)"),  # a test anchor
        ("[dev]", "fastmcp>=3.0,<4", "4.2.3", "EXCLUDES-NEWEST"),  # a dev range is still checked
        ("core", "httpx>=0.27", None, "UNKNOWN"),  # the index did not answer: not a pass
    ],
)
def test_verdicts(check, where, req, newest, status) -> None:
    assert check.verdict(where, Requirement(req), newest) == status


def test_every_extra_and_env_package_is_read_and_local_packages_are_not(check) -> None:
    reqs = check.requirements()
    places = {where for where, _ in reqs}
    assert {"core", "[train]", "[vllm]", "[fastmcp]", "[dev]", "envs/verifiers_env"} <= places
    names = {r.name for _, r in reqs}
    assert not {n for n in names if n.startswith("openenv-train")}


def test_our_ranges_admit_the_releases_the_issue_named_and_pin_nothing_outside_dev(check) -> None:
    newest = {
        "torch": "2.15.0",
        "vllm": "0.34.0",
        "fastmcp": "4.2.3",
        "mcp": "2.3.0",
        "openai": "3.60.0",
        "transformers": "5.25.0",
        "verifiers": "0.4.0",
        "trl": "1.16.0",
    }
    for where, req in check.requirements():
        if where != "[dev]":
            assert check.verdict(where, req, None) != "EXACT-PIN", (where, str(req))
            if req.name in newest:
                assert req.specifier.contains(Version(newest[req.name])), (where, str(req))
