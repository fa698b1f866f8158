"""Regenerates docs/img's pictures of the env playground and the run viewer (``make screenshots``).

    python scripts/screenshots.py [RUN_DIR ...]   # default: runs/grpo_blackjack_cpu_async (make demo)

Both pages are served on loopback as users get them (a BlackJack server with the playground on,
``openenv-train view`` over the run folders) and photographed in headless Chromium (Debian's
package, driven by Playwright; ``sudo bash scripts/browser.sh`` installs it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import uvicorn

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "img"


def serve(app: Any) -> str:
    """Run ``app`` on a free loopback port in a daemon thread; returns its URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"


def playground(page: Any) -> None:
    import blackjack_env.server
    from blackjack_env.models import BlackjackAction, BlackjackObservation, BlackjackState
    from blackjack_env.server.environment import BlackjackEnvironment

    from openenv_train import create_app

    cards = Path(blackjack_env.server.__file__).parent / "cards.js"
    app = create_app(
        BlackjackEnvironment,
        BlackjackAction,
        BlackjackObservation,
        BlackjackState,
        web=cards,
    )
    page.goto(serve(app) + "/web")
    page.fill("#seed", "11")
    page.click("#reset")
    page.wait_for_selector("#player-cards .card")
    page.select_option("#field-action", label="0")  # hit
    page.click("#step")
    page.wait_for_function("document.getElementById('steps').textContent === '1'")
    page.screenshot(path=str(OUT / "playground.png"), full_page=True)


def viewer(page: Any, runs: list[Path]) -> None:
    from openenv_train.cli.viewer import create_viewer

    page.goto(serve(create_viewer(runs)) + "/")
    page.locator(".chart[data-title=win] path.series").first.wait_for()
    page.screenshot(path=str(OUT / "viewer_curves.png"))
    page.click("button[data-tab=episodes]")
    steps = page.locator("#f-step option").all_inner_texts()[1:]
    if steps:
        page.select_option("#f-step", steps[-1])  # the last periodic eval
        page.fill("#f-text", "hit")  # an episode where the policy no longer always stands
        page.locator("#episodes tbody tr").first.click()
        page.select_option("#compare", label="step 0 (this run)")
    page.screenshot(path=str(OUT / "viewer_episodes.png"), full_page=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", default=["runs/grpo_blackjack_cpu_async"])
    args = parser.parse_args()
    runs = [Path(r) for r in args.runs]
    missing = [str(r) for r in runs if not r.is_dir()]
    if missing:
        print(f"no run folder {', '.join(missing)}: run `make demo` first, or name run folders")
        return 2
    chromium = os.environ.get("OPENENV_TRAIN_CHROMIUM") or shutil.which("chromium")
    if chromium is None:
        print("no chromium: run `sudo bash scripts/browser.sh`")
        return 2
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        playground(page)
        viewer(page, runs)
        browser.close()
    print(f"wrote {OUT}/playground.png, viewer_curves.png, viewer_episodes.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
