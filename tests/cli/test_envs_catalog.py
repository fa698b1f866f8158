"""The env catalog: every env package registers itself; names -> entries; ``openenv-train envs``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from openenv_train.catalog import (
    BrokenEnvEntryError,
    EnvEntry,
    UnknownEnvError,
    env_names,
    get_entry,
)

ENVS = {
    "echo": "echo_env",
    "blackjack": "blackjack_env",
    "guess_number": "guess_number_env",
    "wordle": "wordle_env",
    "coding": "coding_env",
}


def test_every_env_package_is_in_the_catalog() -> None:
    assert set(ENVS) <= set(env_names())
    for name, package in ENVS.items():
        client = get_entry(name).client()
        assert client.__module__.startswith(package) and hasattr(client, "sync")
        assert get_entry(name).app == f"{package}.server.app:app"
        assert get_entry(package).client() is client  # the package name works too


def test_auto_action_is_the_step_model() -> None:
    from blackjack_env import BlackjackAction
    from guess_number_env import GuessAction

    assert get_entry("blackjack").action() is BlackjackAction
    assert get_entry("guess_number").action() is GuessAction
    assert get_entry("guess_number").action().model_validate({"guess": 3}).guess == 3


def test_unknown_name_lists_the_installed_envs() -> None:
    with pytest.raises(UnknownEnvError, match=r"no env named 'blackjak'.*blackjack, coding"):
        get_entry("blackjak").client()


def test_a_broken_entry_names_its_path() -> None:
    entry = EnvEntry("x", "d", "x:app", "nowhere_pkg.client:X", "a:b", "c:d")
    with pytest.raises(
        BrokenEnvEntryError, match="client_path: cannot load 'nowhere_pkg.client:X'"
    ):
        entry.client()
    assert get_entry("echo").state().__name__ == "State"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from openenv_train.cli.main import main; sys.exit(main())",
        ]
        + ["envs", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )


def test_envs_command_table_and_json() -> None:
    table = _cli()
    assert table.returncode == 0, table.stderr
    for name in ENVS:
        assert name in table.stdout
    assert "guess*: integer" in table.stdout  # the action schema, required marked
    rows = {r["name"]: r for r in json.loads(_cli("--json").stdout)}
    assert set(ENVS) <= set(rows)
    assert rows["wordle"]["action"]["required"] == ["guess"]
    assert "patterns" in rows["wordle"]["observation"]["properties"]
    bad = _cli("nope")
    assert bad.returncode == 2 and "installed envs: blackjack" in bad.stderr


def test_envs_reads_at_80_columns() -> None:
    """An 80-column terminal (or a pipe): one block per env, every line within the width and
    the app path whole, not five columns folded into slivers (issue 36)."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from openenv_train.cli.main import main; sys.exit(main())",
        ]
        + ["envs"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    assert max(len(line) for line in out.stdout.splitlines()) <= 80
    assert "  app          wordle_env.server.app:app" in out.stdout
    assert "  action       guess*: integer" in out.stdout
