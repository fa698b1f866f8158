"""The run viewer in a real browser: curves, the eval episodes, two runs, a run still training,
a self-play episode seat by seat."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from ports import free_port
from run_folder import KEPT, SelfPlayEnv, make_run, recorded_eval, recorded_selfplay, tiny_policy

from openenv_train.cli.viewer import create_viewer


@pytest.fixture(scope="module")
def episodes() -> list[dict[str, Any]]:
    return recorded_eval(tiny_policy())


@pytest.fixture
def runs(tmp_path: Path, episodes: list[dict[str, Any]]) -> list[Path]:
    return [make_run(tmp_path / "run_a", episodes), make_run(tmp_path / "run_b", episodes, (0, 20))]


def test_shows_a_curve_and_opens_an_episode(serve_app: Any, page: Any, runs: list[Path]) -> None:
    server = serve_app(create_viewer(runs[:1]))
    page.goto(server.url + "/")
    win = page.locator(".chart[data-title=win]")
    win.locator("path.series").first.wait_for()
    assert win.locator("path.series").count() == 2  # the model and the dashed baseline
    assert page.locator(".chart[data-title='train reward']").count() == 1
    assert page.locator(".chart[data-title^='staleness']").count() == 1
    box = win.locator("rect.overlay").bounding_box()
    page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)  # hover: values
    assert "model: 0.350" in win.locator(".tooltip").inner_text()
    win.locator(".legend-item", has_text="always stand").click()  # toggle a series off
    assert win.locator("path.series").count() == 1

    page.click("button[data-tab=episodes]")
    rows = page.locator("#episodes tbody tr")
    assert rows.count() == 2 * KEPT
    page.select_option("#f-step", "10")
    assert rows.count() == KEPT
    rows.nth(2).click()
    assert page.text_content("#episode-title") == "run_a, step 10, task 2"
    assert page.locator("#episode .turn.model .tok").count() >= 1
    assert "logprob" in page.locator("#episode .tok").first.get_attribute("title")
    page.select_option("#compare", label="step 0 (this run)")  # the same task earlier
    prompt = page.locator("#episode .turn.prompt pre").inner_text()
    assert page.locator("#episode-other .turn.prompt pre").inner_text() == prompt

    page.fill("#f-text", "no such text anywhere")
    assert rows.count() == 0

    page.click("button[data-tab=run]")
    assert f"--resume {runs[0]}" in page.inner_text(".resume")


def test_a_self_play_episode_is_shown_seat_by_seat(
    serve_app: Any, page: Any, tmp_path: Path, episodes: list[dict[str, Any]], kuhn: Any
) -> None:
    games, _ = recorded_selfplay(kuhn.url)
    runs = [
        make_run(tmp_path / "blackjack", episodes),
        make_run(tmp_path / "selfplay", games, env=SelfPlayEnv()),
    ]
    server = serve_app(create_viewer(runs))
    page.goto(server.url + "/")
    page.click("button[data-tab=episodes]")
    page.select_option("#f-run", label="selfplay")
    rows = page.locator("#episodes tbody tr")
    assert rows.count() == 2 * len(games)
    game = games[1]
    returns = [f"seat {s}: {r:g}" for s, r in enumerate(game["rewards"])]
    assert rows.nth(1).locator("td").nth(4).inner_text() == " · ".join(returns)
    rows.nth(1).click()
    assert page.text_content("#episode-title") == "selfplay, step 0, task 1"
    turns = page.locator("#episode .turn")
    assert turns.count() == len(game["turns"])
    for i, t in enumerate(game["turns"]):  # every turn labelled with the seat that saw or said it
        assert turns.nth(i).get_attribute("data-seat") == str(t["seat"])
        what = {"model": "model answer"}.get(t["role"], t["role"])
        assert turns.nth(i).locator(".role").text_content() == f"seat {t['seat']}: {what}"
    seat_of = "e => getComputedStyle(e).borderLeftColor"
    colours = {
        s: page.eval_on_selector(f"#episode .turn.model[data-seat='{s}']", seat_of) for s in (0, 1)
    }
    assert colours[0] != colours[1]  # each seat styled its own way
    assert page.locator("#episode .returns [data-seat]").all_text_contents() == returns
    assert (
        page.locator("#episode p").first.inner_text().startswith("returns " + " · ".join(returns))
    )

    page.select_option("#f-run", label="blackjack")  # a single-agent episode: as before
    rows.first.click()
    assert page.locator("#episode .turn").count() >= 2
    assert page.locator("#episode [data-seat], #episode .returns").count() == 0
    roles = set(page.locator("#episode .turn .role").all_text_contents())
    assert roles <= {"prompt", "model answer", "env"} and "model answer" in roles
    assert page.locator("#episode p").first.inner_text().startswith("reward ")


def test_two_runs_overlaid_and_followed_while_training(
    serve_app: Any, page: Any, runs: list[Path]
) -> None:
    server = serve_app(create_viewer(runs))
    page.goto(server.url + "/")
    win = page.locator(".chart[data-title=win]")
    win.locator("path.series").first.wait_for()
    legend = win.locator(".legend").inner_text()
    assert "run_a: model" in legend and "run_b: model" in legend
    dots = win.locator("circle").count()
    with (runs[0] / "metrics.jsonl").open("a") as f:  # the run's next periodic eval
        f.write(json.dumps({"kind": "eval", "step": 30, "win": 0.5, "mean_return": 0.0}) + "\n")
    page.wait_for_function(
        f"document.querySelectorAll('.chart[data-title=win] circle').length > {dots}",
        timeout=20_000,
    )


def test_api_refuses_what_is_not_a_run(runs: list[Path], serve_app: Any, tmp_path: Path) -> None:
    server = serve_app(create_viewer(runs[:1]))
    assert httpx.get(server.url + "/api/runs/5").status_code == 404
    assert httpx.get(server.url + "/static/app.py").status_code == 404
    with pytest.raises(ValueError, match="not a training run folder"):
        create_viewer([tmp_path])


def test_view_command_names_a_missing_folder(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "openenv_train", "view", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "is not a folder" in out.stdout


def test_the_first_view_draws_without_a_fetch(serve_app: Any, page: Any, runs: list[Path]) -> None:
    """The page carries its first view's data (a headless screenshot taken as soon as the
    scripts ran is not an empty page waiting on /api); later refreshes fetch (issue 36)."""
    server = serve_app(create_viewer(runs[:1]))
    html = httpx.get(server.url + "/").text
    assert '<script id="preload" type="application/json">' in html and "run_a" in html
    fetched: list[str] = []
    page.route("**/api/**", lambda route: (fetched.append(route.request.url), route.abort()))
    page.goto(server.url + "/")
    page.locator(".chart[data-title=win] path.series").first.wait_for(timeout=5_000)
    assert page.locator("#runs").inner_text() == str(runs[0])
    assert fetched == []


def test_the_live_tab_shows_env_servers_and_the_trainer(
    serve_app: Any, page: Any, runs: list[Path]
) -> None:
    from blackjack_env.models import BlackjackAction, BlackjackObservation, BlackjackState
    from blackjack_env.server.environment import BlackjackEnvironment
    from server_helpers import ServerThread
    from websockets.sync.client import connect

    from openenv_train import create_app
    from openenv_train.training.trainer_metrics import serve_trainer_metrics

    env = ServerThread(
        create_app(
            BlackjackEnvironment,
            BlackjackAction,
            BlackjackObservation,
            BlackjackState,
            token="live-tab-test-token",
        )
    ).start()
    trainer = serve_trainer_metrics(0)
    trainer.log("train", 7, {"loss": 0.5})
    try:
        with connect(
            env.ws_url, additional_headers={"Authorization": "Bearer live-tab-test-token"}
        ) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            ws.recv()
            ws.send(json.dumps({"type": "step", "data": {"action": 1}}))
            ws.recv()
            dead = f"http://127.0.0.1:{free_port()}"
            viewer = create_viewer(
                runs[:1],
                [env.url, f"http://127.0.0.1:{trainer.port}", dead],
                token="live-tab-test-token",
            )
            server = serve_app(viewer)
            page.goto(server.url + "/")
            page.click("button[data-tab=live]")
            row = page.locator("#live-servers tr[data-env=BlackjackEnvironment]")
            row.wait_for()
            cells = row.locator("td").all_inner_texts()
            assert cells[0] == env.url and cells[2] == "1 / 4096" and cells[3] == "1"
            assert float(cells[5]) >= 0 and float(cells[6]) > 0  # mean and p99 step ms
            assert "ConnectError" in page.inner_text("#live-servers")  # the dead one says so
            assert page.locator("#live-trainer tbody tr td").nth(1).inner_text() == "7"
    finally:
        trainer.close()
        env.stop()
