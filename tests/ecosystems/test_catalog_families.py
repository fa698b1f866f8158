"""Env families in the catalog: one package, many env names; listed with their schemas by
``openenv-train envs``, started by name by ``openenv-train serve`` and the local runtime."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess

import httpx
import pytest
from cli_runs import run_cli

from openenv_train.catalog import (
    BrokenEnvEntryError,
    EnvFamily,
    UnknownEnvError,
    env_names,
    family_names,
    get_entry,
)
from openenv_train.runtime import LocalProcessProvider


def test_three_families_and_at_least_100_envs() -> None:
    assert {"reasoning_gym", "textarena", "verifiers"} <= set(family_names())
    names = env_names()
    assert len(names) >= 100 and len(names) == len(set(names))
    families = {n.split("/", 1)[0] for n in names if "/" in n}
    assert len(families) >= 3
    assert env_names("verifiers") == [n for n in names if n.startswith("verifiers/")]


def test_unknown_family_and_member_errors_name_what_is_installed() -> None:
    with pytest.raises(UnknownEnvError, match=r"no env family 'gym'.*reasoning_gym, textarena"):
        get_entry("gym/CartPole")
    with pytest.raises(UnknownEnvError, match="reasoning-gym has no dataset 'leg_count'"):
        get_entry("reasoning_gym/leg_count").client()
    with pytest.raises(UnknownEnvError, match="no env family 'nope'"):
        env_names("nope")


def test_a_family_whose_entry_is_not_an_env_entry_is_reported() -> None:
    family = EnvFamily("bad", "d", "openenv_train.catalog:family_names", "builtins:str")
    assert family.members() == sorted(family_names())
    with pytest.raises(BrokenEnvEntryError, match="gave a str, not an openenv_train"):
        family.entry("x")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(list(args), timeout=300)


def test_envs_command_lists_every_family_member_with_its_schema() -> None:
    proc = _cli("envs", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert len(rows) >= 100 and not [n for n, r in rows.items() if "error" in r]
    assert rows["reasoning_gym/leg_counting"]["action"]["required"] == ["answer"]
    assert rows["textarena/Sudoku-v0"]["app"] == "textarena_env.server.apps:Sudoku-v0"
    one = _cli("envs", "--family", "nope")
    assert one.returncode == 2 and "no env family 'nope'" in one.stderr


def test_the_local_runtime_serves_a_member_by_its_app_path() -> None:
    app = get_entry("reasoning_gym/basic_arithmetic").app
    with LocalProcessProvider(app, startup_timeout=120) as server:
        meta = httpx.get(f"{server.base_url}/metadata", timeout=30).json()
        reset = httpx.post(f"{server.base_url}/reset", json={"seed": 1}, timeout=30).json()
    assert meta["name"] == "reasoning_gym/basic_arithmetic"
    assert meta["version"] == importlib.metadata.version("reasoning-gym")
    assert reset["observation"]["question"].startswith("Calculate")


def test_each_member_names_a_text_spec_that_knows_its_env() -> None:
    spec = get_entry("reasoning_gym/aiw").text_spec()(seed=0, vocabulary_samples=4)
    assert spec.dataset == "aiw" and spec.vocabulary
    assert get_entry("textarena/Sudoku-v0").text_spec().__name__ == "TextArenaSpec"
    assert get_entry("verifiers/vf-arithmetic").text_spec().__name__ == "VerifiersSpec"


def test_serve_resolves_env_names() -> None:
    from openenv_train.cli.env_cli import _package_dir
    from openenv_train.cli.main import CLIError

    assert _package_dir("textarena/GuessTheNumber-v0") == (
        None,
        "textarena_env.server.apps:GuessTheNumber-v0",
    )
    assert _package_dir("blackjack") == (None, "blackjack_env.server.app:app")
    with pytest.raises(CLIError, match="neither an env folder nor an import path.*blackjak"):
        _package_dir("blackjak")
