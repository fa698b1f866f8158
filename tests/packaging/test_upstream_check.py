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


@pytest.mark.parametrize(
    ("pin", "held", "newest", "status"),
    [
        ("openai==3.63.0", None, "3.63.0", "ok"),
        ("openai==3.60.0", None, "3.63.0", "BEHIND"),  # a stale pin fails
        ("fastmcp==3.4.11", "OpenEnv 0.10 needs fastmcp<4", "4.2.3", "held"),
        ("openai==3.60.0", None, None, "UNKNOWN"),
    ],
)
def test_constraint_verdicts(check, pin, held, newest, status) -> None:
    assert check.constraint_verdict(Requirement(pin), held, newest) == status


def test_a_pin_is_held_only_by_the_comment_right_above_it(check, tmp_path) -> None:
    path = tmp_path / "constraints.txt"
    path.write_text(
        "# a header that holds nothing\ntorch==2.13.0\n"
        "# held: the anchor caps it\n# more words\nfastmcp==3.4.11\nmcp==1.30.0\n"
    )
    held = {req.name: reason for req, reason in check.constraints(path)}
    assert held == {"torch": None, "fastmcp": "the anchor caps it", "mcp": None}


def test_every_pin_of_our_constraints_is_exact_and_every_held_one_says_why(check) -> None:
    for req, held in check.constraints():
        assert check._is_exact_pin(req), str(req)
        assert held is None or len(held) > 20, (str(req), held)
