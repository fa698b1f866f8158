#!/usr/bin/env python3
"""Does every dependency range admit the newest release the package index serves?

A scheduled upstream watch is not possible everywhere, so this script is the check to run by hand
or from CI: it reads the requirements of the package, of each of its extras and of each env
package under envs/, asks the index (through pip itself, so pip's own index configuration
applies) for the newest release of each, and prints one row per requirement. It exits 1 when a
range excludes the newest release, or when a requirement is an exact pin outside the dev extra
(the dev extra may pin test anchors such as OpenEnv 0.10). Exact versions for reproducible CI
belong in constraints.txt: its rows come last, and a pin behind the newest release fails unless
the comment line right above it starts with ``# held:`` and says why (a test anchor's own cap, a
wheel this machine cannot download).

Usage: python scripts/upstream_check.py [--json] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
# Extras whose exact pins are allowed: test anchors, not what a user installs.
PIN_ALLOWED_EXTRAS = {"dev"}
_NEWEST = re.compile(r"^\S+ \(([^)]+)\)", re.MULTILINE)


@dataclass
class Row:
    """One requirement: where it is declared, our range, the newest release, and the verdict."""

    name: str
    where: str
    spec: str
    newest: str | None
    status: str  # ok | pin (dev) | held | EXCLUDES-NEWEST | EXACT-PIN | BEHIND | UNKNOWN


def _local_names() -> set[str]:
    """The distributions this repository builds (the package and envs/*): not on the index."""
    names = {"openenv-train"}
    for pyproject in ROOT.glob("envs/*/pyproject.toml"):
        names.add(canonicalize_name(tomllib.loads(pyproject.read_text())["project"]["name"]))
    return names


def requirements() -> list[tuple[str, Requirement]]:
    """Every (where, requirement) of the package, its extras and the env packages under envs/."""
    out: list[tuple[str, Requirement]] = []
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    out += [("core", Requirement(r)) for r in project.get("dependencies", [])]
    for extra, reqs in project.get("optional-dependencies", {}).items():
        out += [(f"[{extra}]", Requirement(r)) for r in reqs]
    for pyproject in sorted(ROOT.glob("envs/*/pyproject.toml")):
        env = tomllib.loads(pyproject.read_text())["project"]
        out += [
            (f"envs/{pyproject.parent.name}", Requirement(r)) for r in env.get("dependencies", [])
        ]
    local = _local_names()
    return [(w, r) for w, r in out if canonicalize_name(r.name) not in local]


HELD = "# held:"


def constraints(path: Path = ROOT / "constraints.txt") -> list[tuple[Requirement, str | None]]:
    """Each pin of constraints.txt with its held reason (the ``# held:`` comment right above)."""
    out: list[tuple[Requirement, str | None]] = []
    reason: str | None = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line.startswith("#"):
            reason = line[len(HELD) :].strip() if line.startswith(HELD) else reason
            continue
        if line:
            out.append((Requirement(line), reason))
        reason = None
    return out


def constraint_verdict(req: Requirement, held: str | None, newest: str | None) -> str:
    """ok when the pin is the newest release, held when a comment says why not, else BEHIND."""
    pinned = next(iter(req.specifier)).version
    if newest is None:
        return "UNKNOWN"
    if Version(pinned) >= Version(newest):
        return "ok"
    return "held" if held else "BEHIND"


def newest_release(name: str) -> str | None:
    """The newest final release the configured index serves (None when pip cannot say)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", name, "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    match = _NEWEST.search(proc.stdout)
    return match.group(1) if proc.returncode == 0 and match else None


def _is_exact_pin(req: Requirement) -> bool:
    return any(s.operator in ("==", "===") and "*" not in s.version for s in req.specifier)


def verdict(where: str, req: Requirement, newest: str | None) -> str:
    """ok, or why the row fails (UNKNOWN when the index did not answer: not a pass, not a fail)."""
    if _is_exact_pin(req):
        return "pin (dev)" if where.strip("[]") in PIN_ALLOWED_EXTRAS else "EXACT-PIN"
    if newest is None:
        return "UNKNOWN"
    try:
        admitted = req.specifier.contains(Version(newest), prereleases=True)
    except InvalidVersion:
        return "UNKNOWN"
    return "ok" if admitted else "EXCLUDES-NEWEST"


def check(only: set[str] | None = None) -> list[Row]:
    def wanted(req: Requirement) -> bool:
        return not only or canonicalize_name(req.name) in only

    reqs = [(w, r) for w, r in requirements() if wanted(r)]
    pins = [(r, held) for r, held in constraints() if wanted(r)]
    names = sorted(
        {canonicalize_name(r.name) for _, r in reqs} | {canonicalize_name(r.name) for r, _ in pins}
    )
    with ThreadPoolExecutor(max_workers=8) as pool:  # bounded: a few index queries at a time
        newest = dict(zip(names, pool.map(newest_release, names), strict=True))
    rows = []
    for where, req in reqs:
        found = newest[canonicalize_name(req.name)]
        spec = str(req.specifier) or "(any)"
        rows.append(Row(req.name, where, spec, found, verdict(where, req, found)))
    for req, held in pins:
        found = newest[canonicalize_name(req.name)]
        status = constraint_verdict(req, held, found)
        rows.append(Row(req.name, "constraints.txt", str(req.specifier), found, status))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per row")
    parser.add_argument("--only", nargs="*", help="check only these distribution names")
    args = parser.parse_args(argv)
    rows = check({canonicalize_name(n) for n in args.only} if args.only else None)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=1))
    else:
        width = max(len(r.name) for r in rows) + 1
        wwidth = max(len(r.where) for r in rows) + 1
        print(f"{'dependency':<{width}} {'declared in':<{wwidth}} {'newest':<10} status   range")
        for r in rows:
            print(
                f"{r.name:<{width}} {r.where:<{wwidth}} {r.newest or '?':<10} {r.status:<8} {r.spec}"
            )
    bad = [r for r in rows if r.status in ("EXCLUDES-NEWEST", "EXACT-PIN", "BEHIND")]
    unknown = [r for r in rows if r.status == "UNKNOWN"]
    print(
        f"\n{len(rows)} requirements, {len(bad)} failing, {len(unknown)} not answered by the index",
        file=sys.stderr,
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
