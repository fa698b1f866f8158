"""Browser fixtures: Debian's Chromium driven by Playwright (its own browser download cannot run
here, so the system browser is launched by path). ``scripts/browser.sh`` installs it as root."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from server_helpers import serve_app  # noqa: F401  (fixture)

BROWSER_FIX = (
    "no Chromium found: run `sudo bash scripts/browser.sh` (Debian's chromium package; `make "
    "test` runs it as root), or point OPENENV_TRAIN_CHROMIUM at a Chromium binary"
)


def chromium_path() -> str:
    path = os.environ.get("OPENENV_TRAIN_CHROMIUM") or shutil.which("chromium")
    if path is None:
        pytest.fail(BROWSER_FIX)
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium for one test file. Not for the session: Playwright's sync API keeps its event
    loop running on the main thread while it is open, so an async test after it in the same
    worker process (test files share workers) fails with "cannot be called from a running event
    loop"; closed after each file, the loop is gone."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page; any script error on it fails the test."""
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.set_default_timeout(15_000)
    yield pg
    context.close()
    assert not errors, f"the page logged errors: {errors}"


@pytest.fixture(scope="module")
def kuhn() -> Iterator[Any]:
    """A Kuhn poker server holding both seats of each game (self-play), on a loopback port."""
    from openspiel_games_env.server.apps import app_for
    from server_helpers import ServerThread

    server = ServerThread(app_for("kuhn_poker")).start()
    yield server
    server.stop()
