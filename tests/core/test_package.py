"""The top-level package: one import for env authors, and ``import openenv_train`` stays light."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import openenv_train

INIT = Path(openenv_train.__file__)
HEAVY = ("fastapi", "uvicorn", "httpx", "torch", "transformers", "trl")


def loaded_after(code: str) -> list[str]:
    """The heavy modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_import_openenv_train_loads_no_server_client_or_torch() -> None:
    assert loaded_after("import openenv_train") == []


def test_the_model_names_load_without_the_web_stack() -> None:
    # an env's models.py is imported by clients and trainers that never serve
    assert loaded_after("from openenv_train import Action, Observation, State, StepResult") == []


def test_the_checker_sees_a_heavy_import() -> None:
    assert "fastapi" in loaded_after("from openenv_train import create_app")


@pytest.mark.parametrize("name", sorted(set(openenv_train.__all__) - {"__version__"}))
def test_every_exported_name_is_its_submodules_object(name: str) -> None:
    home = openenv_train._HOME[name]
    module = importlib.import_module(f"openenv_train.{home}")
    assert getattr(openenv_train, name) is getattr(module, name)


def test_all_and_dir_list_the_exports_and_an_unknown_name_is_an_attribute_error() -> None:
    exported = set(openenv_train._HOME)
    assert exported | {"__version__"} == set(openenv_train.__all__)
    assert exported <= set(dir(openenv_train))
    assert {"Action", "Environment", "create_app", "EnvClient", "NoEpisodeError"} <= exported
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        openenv_train.Nope  # noqa: B018


def test_the_type_checking_imports_match_the_lazy_exports() -> None:
    """Editors read the ``if TYPE_CHECKING:`` block; it must name exactly what loads lazily."""
    tree = ast.parse(INIT.read_text())
    block = next(
        n
        for n in tree.body
        if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING"
    )
    seen = {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert seen == openenv_train._HOME


def author_imports_by_submodule(path: Path, source: str) -> list[str]:
    """``from openenv_train.<sub> import X`` where ``from openenv_train import X`` would do
    (``openenv_train.openenv``, OpenEnv's API, is exempt: the ported envs import from it)."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = node.module or ""
        # OpenEnv's API (openenv_train.openenv) is its own spelling, not a detour to a home name
        if module.startswith("openenv_train.") and not module.startswith("openenv_train.openenv"):
            lent = [a.name for a in node.names if a.name in openenv_train._HOME]
            if lent:
                bad.append(f"{path}:{node.lineno}: from {node.module} import {', '.join(lent)}")
    return bad


def test_the_shipped_envs_and_the_scaffold_use_the_one_import(tmp_path: Path) -> None:
    from openenv_train.cli.scaffold import scaffold

    envs = sorted((INIT.parents[1] / "envs").glob("*/*/**/*.py"))
    assert len(envs) > 20, "the shipped envs moved: point this test at them"
    generated = [p for p in scaffold("my_env", tmp_path / "my_env") if p.suffix == ".py"]
    bad = [
        v for path in envs + generated for v in author_imports_by_submodule(path, path.read_text())
    ]
    assert not bad, "use `from openenv_train import ...`:\n" + "\n".join(bad)


def test_the_one_import_checker_flags_a_submodule_path() -> None:
    assert author_imports_by_submodule(Path("m.py"), "from openenv_train.core.models import State")
    assert not author_imports_by_submodule(Path("m.py"), "from openenv_train.rollout import X")
    assert not author_imports_by_submodule(
        Path("m.py"), "from openenv_train.openenv import create_app"
    )


def test_the_root_holds_the_env_authors_names_only() -> None:
    """Rubrics, the catalog and OpenEnv's own spellings each have their one home."""
    homes = {
        "Rubric": "openenv_train.core.rubrics",
        "WeightedSum": "openenv_train.core.rubrics",
        "LLMJudge": "openenv_train.judge",
        "EnvEntry": "openenv_train.catalog",
        "EnvFamily": "openenv_train.catalog",
        "AutoEnv": "openenv_train.openenv",
        "AutoAction": "openenv_train.openenv",
    }
    for name, home in homes.items():
        assert name not in openenv_train._HOME
        assert hasattr(importlib.import_module(home), name), f"{home}.{name}"
