"""Catalog lookups stay cheap: the installed packages are scanned once per ``sys.path`` (until
``reset_discovery``), an app's env name loads only its own package's entries, and a config
check imports no torch."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest

from openenv_train import catalog
from openenv_train.catalog import name_of_app, reset_discovery


def test_an_app_is_named_by_its_catalog_entry() -> None:
    assert name_of_app("blackjack_env.server.app:app") == "blackjack"
    assert name_of_app("reasoning_gym_env.server.apps:aiw") == "reasoning_gym/aiw"
    assert name_of_app("openenv_train.recipes.grpo_text.countdown:app") is None
    for entry in catalog.entries().values():  # every env's app leads to an env serving it
        found = name_of_app(entry.app)
        assert found is not None and catalog.get_entry(found).app == entry.app


def test_the_packages_are_scanned_once_per_path_until_reset(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    scans: list[str] = []
    real = importlib.metadata.entry_points

    def counting(**kw):
        scans.append(kw.get("group", ""))
        return real(**kw)

    monkeypatch.setattr(importlib.metadata, "entry_points", counting)
    reset_discovery()
    first = catalog.get_entry("blackjack")
    catalog.env_names()
    catalog.get_entry("textarena/TicTacToe-v0")
    assert sorted(scans) == sorted([catalog.ENTRY_POINT_GROUP, catalog.FAMILY_ENTRY_POINT_GROUP])
    assert catalog.get_entry("blackjack") == first
    assert len(scans) == 2  # asked again: not scanned again
    monkeypatch.syspath_prepend(str(tmp_path))  # a new place to look: scanned again
    catalog.env_names()
    assert len(scans) == 4
    reset_discovery()  # a package installed since (pip install in a notebook): scanned again
    catalog.env_names()
    assert len(scans) == 6


def test_a_config_check_imports_no_torch() -> None:
    code = (
        "import sys; from openenv_train.recipes.grpo_text.config import load_config; "
        "load_config('configs/grpo_text_countdown.yaml'); "
        "print(sorted(m for m in ('torch', 'transformers', 'trl') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr[-2000:]
