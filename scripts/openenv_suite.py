"""Run OpenEnv's own test suite against openenv-train (or against OpenEnv itself, the baseline).

    python scripts/openenv_suite.py /path/to/OpenEnv                  # against openenv-train
    python scripts/openenv_suite.py /path/to/OpenEnv --target openenv # baseline: OpenEnv 0.10
    python scripts/openenv_suite.py /path/to/OpenEnv --paths tests/core/test_mcp --json out.json

``/path/to/OpenEnv`` is a checkout of github.com/meta-pytorch/OpenEnv (only its ``tests/`` are
run). With ``--target openenv-train`` an import shim, loaded as a pytest plugin from this file,
answers every ``openenv.*`` (and old ``openenv_core.*``) import with openenv-train's objects: a
name OpenEnv exports resolves to the object of the same name in openenv-train (or the one named in
``RENAMES``); a name openenv-train lacks is an ``ImportError`` and its test file fails, so the counts
measure what a user who changes only the imports gets (``--lenient``: only the tests that use a
missing name fail, which shows how much of each file works). The report gives passed / failed / skipped
(and collection errors) per test file.

Patching reaches our code: setting a name on an ``openenv.*`` alias module (what
``unittest.mock.patch("openenv.core.llm_client.AsyncOpenAI")`` or ``monkeypatch.setattr`` do)
sets it on the openenv-train module that answers that name, and deleting it puts back what that
module held before (``patch`` deletes on exit), so nested patches unwind in order. Names no
openenv-train module answers, and submodules the import system links to their parent, stay on
the alias.

A measurement tool, not part of ``make test``: it needs a checkout of OpenEnv's repository.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import types
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

DEFAULT_PATHS = ("tests/core", "tests/test_core")

#: OpenEnv name -> openenv-train's "module:attribute", where the name differs.
RENAMES: dict[str, str] = {
    "create_fastapi_app": "openenv_train.openenv.server:create_app",
    "convert_to_ws_url": "openenv_train.openenv.client:convert_to_ws_url",
    "GenericMCPObservation": "openenv_train.client.generic:GenericObservation",
    "MCPClientBase": "openenv_train.openenv.client:MCPClientBase",
    # the LLM clients' tool and message converters (private in OpenEnv, public here)
    "_clean_mcp_schema": "openenv_train.judge.llm_client:tool_input_schema",
    "_mcp_tools_to_openai": "openenv_train.judge.llm_client:tools_to_openai",
    "_mcp_tools_to_anthropic": "openenv_train.judge.llm_client:tools_to_anthropic",
    "_openai_msgs_to_anthropic": "openenv_train.judge.llm_client:messages_to_anthropic",
    # the package-version helper (private in OpenEnv, public here)
    "_load_package_version": "openenv_train.catalog:installed_version",
}

#: openenv-train modules searched (in this order) for a name OpenEnv exports: the compatibility
#: layer first (OpenEnv's spellings), then the native modules (the names spelled alike).
SEARCH: tuple[str, ...] = (
    "openenv_train.openenv",
    "openenv_train.openenv.server",
    "openenv_train.openenv.client",
    "openenv_train.openenv.auto",
    "openenv_train.openenv.docker",
    "openenv_train.openenv.evals",
    "openenv_train",
    "openenv_train.core",
    "openenv_train.core.models",
    "openenv_train.core.mcp_types",
    "openenv_train.core.errors",
    "openenv_train.core.messages",
    "openenv_train.core.wire",
    "openenv_train.core.rubrics",
    "openenv_train.server",
    "openenv_train.server.environment",
    "openenv_train.server.mcp_environment",
    "openenv_train.server.app",
    "openenv_train.server.routes",
    "openenv_train.server.jsonrpc",
    "openenv_train.client",
    "openenv_train.client.env_client",
    "openenv_train.client.generic",
    "openenv_train.client.mcp_client",
    "openenv_train.client.sync",
    "openenv_train.judge",
    "openenv_train.judge.llm_client",
    "openenv_train.judge.llm_judge",
    "openenv_train.catalog",
    "openenv_train.runtime.daytona",
)

#: where ``_tail_modules`` looks for a module named like OpenEnv's, the compatibility layer first
TAIL_BASES = (
    "openenv_train.openenv",
    "openenv_train",
    "openenv_train.core",
    "openenv_train.server",
    "openenv_train.judge",
)

ALIASED_ROOTS = ("openenv", "openenv_core")


def _import_or_none(name: str) -> types.ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _tail_modules(fullname: str) -> list[str]:
    """Our modules named like OpenEnv's: ``openenv.core.rubrics.base`` ->
    ``openenv_train.core.rubrics.rubric``..., ``openenv.core.evals`` -> ``openenv_train.openenv.evals``;
    a module's last name alone too (``openenv.core.rubrics.llm_judge`` ->
    ``openenv_train.judge.llm_judge``)."""
    parts = fullname.split(".")[1:]
    if parts and parts[0] == "core":
        parts = parts[1:]
    if parts and parts[0] == "env_server":
        parts = parts[1:]
    tails = [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
    tails += [parts[-1]] if len(parts) > 1 else []
    return [f"{base}.{tail}" for tail in tails for base in TAIL_BASES]


class _AliasModule(types.ModuleType):
    """An ``openenv.*`` module whose attributes are openenv-train's objects of the same name."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__path__: list[str] = []  # a package: submodule imports come back to the finder
        search = [m for m in _tail_modules(name) if _import_or_none(m) is not None]
        super().__setattr__("_search", search + list(SEARCH))
        # name -> [(our module, its name there, what it held before)], one entry per set
        super().__setattr__("_saved", {})

    def _owner(self, attr: str) -> tuple[types.ModuleType, str] | None:
        """The openenv-train module that answers ``attr``, and the name it has there."""
        if attr in RENAMES:
            module, _, obj = RENAMES[attr].partition(":")
            return importlib.import_module(module), obj
        for module_name in self._search:
            module = _import_or_none(module_name)
            if module is not None and hasattr(module, attr):
                return module, attr
        return None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        owner = self._owner(attr)
        if owner is not None:
            return getattr(*owner)
        if os.environ.get("OPENENV_SUITE_LENIENT") == "1":
            return _missing(f"{self.__name__}.{attr}")
        raise AttributeError(f"openenv-train has no counterpart of {self.__name__}.{attr}")

    def __setattr__(self, attr: str, value: Any) -> None:
        owner = None
        if not attr.startswith("__") and not isinstance(value, types.ModuleType):
            owner = self._owner(attr)
        if owner is None:
            super().__setattr__(attr, value)
            return
        module, name = owner
        self._saved.setdefault(attr, []).append((module, name, module.__dict__.get(name, _ABSENT)))
        setattr(module, name, value)

    def __delattr__(self, attr: str) -> None:
        stack = self._saved.get(attr)
        if not stack:
            super().__delattr__(attr)
            return
        module, name, before = stack.pop()
        if before is _ABSENT:
            delattr(module, name)
        else:
            setattr(module, name, before)


_ABSENT = object()


def _missing(name: str) -> type:
    """``--lenient``: a stand-in for a name we lack, so only the tests that use it fail."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"openenv-train has no counterpart of {name}")

    return type(name.rsplit(".", 1)[1], (), {"__init__": refuse, "__module__": "missing"})


def openenv_module_names() -> set[str]:
    """Every module of the installed ``openenv`` package (read from disk, nothing imported)."""
    spec = importlib.util.find_spec("openenv")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            "openenv is not installed: pip install openenv==0.10.0 (its names are the map)"
        )
    names = {"openenv"}
    for top in spec.submodule_search_locations:
        for path in Path(top).rglob("*.py"):
            parts = path.relative_to(top).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            names.add(".".join(("openenv", *parts)))
    return names


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers the imports of OpenEnv's own modules (and only those: ``from m import Name``
    must not turn a missing ``Name`` into a module)."""

    def __init__(self) -> None:
        self.modules = openenv_module_names()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        root, _, rest = fullname.partition(".")
        if root in ALIASED_ROOTS and "openenv" + ("." + rest if rest else "") in self.modules:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        return _AliasModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def install_shim() -> None:
    """Make ``import openenv...`` resolve to openenv-train (drops an imported real ``openenv``)."""
    for name in list(sys.modules):
        if name.split(".")[0] in ALIASED_ROOTS:
            del sys.modules[name]
    finder = _AliasFinder()  # reads the real package's module names before hiding it
    sys.meta_path.insert(0, finder)


# ---- the pytest plugin (loaded with -p openenv_suite) ---------------------------------------------

if os.environ.get("OPENENV_SUITE_TARGET") == "openenv-train":
    install_shim()

_RESULTS: list[dict[str, str]] = []


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _RESULTS.append({"nodeid": report.nodeid, "outcome": "error", "why": _why(report)})


def pytest_runtest_logreport(report: Any) -> None:
    if report.when == "call":
        outcome = report.outcome
    elif report.failed:  # a fixture's setup or teardown failed
        outcome = "error"
    elif report.skipped:  # skipped before the call (skipif, importorskip in a fixture)
        outcome = "skipped"
    else:
        return
    _RESULTS.append({"nodeid": report.nodeid, "outcome": outcome, "why": _why(report)})


def pytest_sessionfinish(session: Any) -> None:
    out = os.environ.get("OPENENV_SUITE_RESULTS")
    if out:
        Path(out).write_text(json.dumps(_RESULTS))


def _why(report: Any) -> str:
    if report.outcome == "skipped" and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])[:300]
    text = str(report.longrepr or "")
    lines = [ln for ln in text.splitlines() if ln.startswith("E ")]
    return (lines[-1] if lines else text[-300:])[:300]


# ---- the runner ------------------------------------------------------------------------------------


def run(
    checkout: Path, target: str, paths: list[str], timeout: int, lenient: bool = False
) -> list[dict[str, str]]:
    """Run pytest on ``paths`` of the checkout in a child process; one record per test."""
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.json"
        env = {
            **os.environ,
            "OPENENV_SUITE_TARGET": target,
            "OPENENV_SUITE_RESULTS": str(results),
            "OPENENV_SUITE_LENIENT": "1" if lenient else "0",
            "PYTHONPATH": os.pathsep.join(
                [str(Path(__file__).resolve().parent), os.environ.get("PYTHONPATH", "")]
            ),
        }
        cmd = [sys.executable, "-m", "pytest", *paths, "-p", "openenv_suite", "-q"]
        cmd += ["-p", "no:cacheprovider", "--rootdir", str(checkout), "-o", "addopts="]
        cmd += [
            "--continue-on-collection-errors",
            "--timeout",
            "120",
            "-m",
            "not docker and not network",
        ]
        subprocess.run(cmd, cwd=checkout, env=env, timeout=timeout, stdout=subprocess.DEVNULL)
        if not results.exists():
            raise SystemExit("pytest wrote no results: run it by hand to see why\n" + " ".join(cmd))
        return json.loads(results.read_text())


def by_file(results: list[dict[str, str]]) -> dict[str, Counter[str]]:
    files: dict[str, Counter[str]] = defaultdict(Counter)
    for r in results:
        files[r["nodeid"].split("::")[0]][r["outcome"]] += 1
    return dict(sorted(files.items()))


def report(results: list[dict[str, str]], target: str, show_failures: bool) -> str:
    kinds = ("passed", "failed", "skipped", "error")
    lines = [
        f"OpenEnv's test suite against {target}",
        f"{'file':60s} " + " ".join(f"{k:>7s}" for k in kinds),
    ]
    total: Counter[str] = Counter()
    for path, counts in by_file(results).items():
        total.update(counts)
        lines.append(f"{path:60s} " + " ".join(f"{counts[k]:7d}" for k in kinds))
    lines.append(f"{'TOTAL':60s} " + " ".join(f"{total[k]:7d}" for k in kinds))
    if show_failures:
        lines.append("")
        for r in results:
            if r["outcome"] in ("failed", "error"):
                lines.append(f"{r['outcome'].upper()} {r['nodeid']}: {r['why']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a checkout of OpenEnv's repository")
    parser.add_argument("--target", choices=("openenv-train", "openenv"), default="openenv-train")
    parser.add_argument("--paths", nargs="+", default=list(DEFAULT_PATHS))
    parser.add_argument("--json", type=Path, help="also write every test's outcome here")
    parser.add_argument("--failures", action="store_true", help="list each failure's last line")
    parser.add_argument("--timeout", type=int, default=1800)
    parser.add_argument(
        "--lenient",
        action="store_true",
        help="a name openenv-train lacks fails only the tests that use it, not its whole file",
    )
    args = parser.parse_args(argv)
    if not (args.checkout / "tests").is_dir():
        parser.error(
            f"{args.checkout} has no tests/ folder: give a checkout of OpenEnv's repository"
        )
    results = run(args.checkout.resolve(), args.target, args.paths, args.timeout, args.lenient)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(report(results, args.target, args.failures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
