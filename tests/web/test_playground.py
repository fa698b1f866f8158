"""The env playground at /web, played by clicking in a real browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import blackjack_env.server
import httpx
import pytest
from blackjack_env.models import BlackjackAction, BlackjackObservation, BlackjackState
from blackjack_env.server.environment import BlackjackEnvironment
from cli_runs import start_cli
from ports import free_port
from server_helpers import wait_until

from openenv_train import CallToolAction, State, create_app
from openenv_train.catalog import env_names, family_names, get_entry

CARDS = Path(blackjack_env.server.__file__).parent / "cards.js"


def blackjack_app(**kw: Any) -> Any:
    return create_app(
        BlackjackEnvironment, BlackjackAction, BlackjackObservation, BlackjackState, **kw
    )


def test_plays_a_hand_of_blackjack_by_clicking(serve_app: Any, page: Any) -> None:
    server = serve_app(blackjack_app(web=CARDS))
    page.goto(server.url + "/web")
    page.wait_for_selector("#field-action option", state="attached")
    assert page.inner_text("#env-name") == "blackjack_env"
    page.fill("#seed", "7")
    page.click("#reset")
    page.wait_for_selector("#player-cards .card")
    assert page.inner_text("#done") == "false"
    assert page.locator("#player-cards .card").count() == 2  # the renderer drew the cards
    page.select_option("#field-action", label="1")  # stand: the dealer plays out
    page.click("#step")
    page.wait_for_function("document.getElementById('done').textContent === 'true'")
    assert page.inner_text("#reward") in ("-1", "0", "1", "1.5")
    assert page.locator("#dealer-cards .card").count() >= 2  # revealed at the end
    assert page.locator("#history tbody tr").count() == 2  # reset + one step
    # the state panel is fetched after the step's reply: wait for it rather than race it
    page.wait_for_function(
        """document.getElementById('state').textContent.includes('"done": true')"""
    )
    assert page.is_disabled("#step")


def test_a_bad_action_shows_the_servers_error_and_the_session_goes_on(
    serve_app: Any, page: Any
) -> None:
    server = serve_app(blackjack_app(web=True))
    page.goto(server.url + "/web")
    page.fill("#seed", "0")  # a hand still in play after the deal (a random one may be a natural)
    page.click("#reset")
    page.wait_for_selector("#history tbody tr")
    page.evaluate("OpenEnvPlayground.step({action: 'fold'})")
    page.wait_for_function("document.getElementById('action-error').textContent.includes('action')")
    page.select_option("#field-action", label="1")
    page.click("#step")
    page.wait_for_function("document.getElementById('done').textContent === 'true'")


def test_a_reset_while_the_page_connects_keeps_one_session(serve_app: Any, page: Any) -> None:
    """Reset clicked before the page's own connect(): the page then opened a second session
    and sent the next step there, to an env never reset ("no game in progress")."""
    server = serve_app(blackjack_app(web=True))
    held: list[Any] = []
    page.route("**/metrics", lambda route: held.append(route))  # start() connects after it
    page.goto(server.url + "/web")
    page.wait_for_selector("#reset:enabled")
    page.fill("#seed", "0")
    page.click("#reset")
    page.wait_for_selector("#history tbody tr")
    held[0].continue_()
    page.wait_for_function("document.getElementById('fig-sessions').textContent.includes('/')")
    page.select_option("#field-action", label="1")
    page.click("#step")
    page.wait_for_function("document.getElementById('done').textContent === 'true'")
    assert page.inner_text("#action-error") == ""


def test_reset_is_off_until_the_page_is_wired(serve_app: Any, page: Any) -> None:
    """A click on Reset before the page read /schema used to do nothing, silently."""
    server = serve_app(blackjack_app(web=True))
    held: list[Any] = []
    page.route("**/schema", lambda route: held.append(route))
    page.goto(server.url + "/web")
    page.wait_for_function("document.getElementById('env-name').textContent === 'blackjack_env'")
    # /schema is fetched after /metadata named the env: the route handler runs when the browser
    # gets there, so wait for it (bounded) rather than assume it already has.
    for _ in range(200):
        if held:
            break
        page.wait_for_timeout(25)
    assert held and page.is_disabled("#reset") and page.is_disabled("#fig-refresh")
    held[0].continue_()
    page.wait_for_selector("#reset:enabled")
    page.click("#reset")
    page.wait_for_selector("#history tbody tr")


def test_mcp_env_lists_its_tools_with_a_call_form(serve_app: Any, page: Any) -> None:
    from echo_env.models import EchoObservation
    from echo_env.server.environment import EchoEnvironment

    server = serve_app(
        create_app(EchoEnvironment, CallToolAction, EchoObservation, State, web=True)
    )
    page.goto(server.url + "/web")
    page.click("#reset")
    page.wait_for_selector("#tools-section:not([hidden]) form.tool")
    tool = page.locator("form.tool").first
    name = tool.get_attribute("data-tool")
    for field in tool.locator("input[type=text], textarea").all():
        field.fill("hello from the browser")
    page.click(f"text=Call {name}")
    page.wait_for_function(
        "[...document.querySelectorAll('.tool-result')].some(e => e.textContent.length > 2)"
    )
    assert "hello from the browser" in page.inner_text(".tool-result >> nth=0")


def test_off_unless_asked_and_behind_the_token(serve_app: Any) -> None:
    off = serve_app(blackjack_app())
    assert httpx.get(off.url + "/web").status_code == 404
    gated = serve_app(blackjack_app(web=True, token="s3cret-token-for-the-test"))
    assert httpx.get(gated.url + "/web").status_code == 401
    assert httpx.get(gated.url + "/web/static/playground.js").status_code == 401
    ok = httpx.get(
        gated.url + "/web", headers={"Authorization": "Bearer s3cret-token-for-the-test"}
    )
    assert ok.status_code == 200 and "playground.js" in ok.text
    assert httpx.get(off.url + "/web/static/../app.py").status_code == 404


def test_a_renderer_that_is_not_a_js_file_is_refused_at_build_time(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"missing\.js.*\.js file"):
        blackjack_app(web=tmp_path / "missing.js")


def _playground_sample() -> list[str]:
    """Every single env, and the first two members of each family (a family's members share one
    server and one form builder; the ecosystem tests drive more of them over the wire)."""
    members = {n for f in family_names() for n in env_names(f)}
    sample = [n for n in env_names() if n not in members]
    return sample + [n for f in family_names() for n in env_names(f)[:2]]


@pytest.mark.parametrize("name", _playground_sample())
def test_every_catalog_env_gets_a_form_from_openenv_train_serve(name: str, page: Any) -> None:
    """`openenv-train serve` turns the page on for loopback; no env-specific code draws it."""
    port = free_port()
    proc = start_cli(["serve", get_entry(name).app, "--port", str(port)])
    try:
        url = f"http://127.0.0.1:{port}"
        # a bounded wait: verifiers' envs import their library at start, over 60 s in a CI run
        # with training beside it (65 s in a quiet one for the whole test)
        wait_until(lambda: _up(url) or proc.poll() is not None, timeout=180)
        assert proc.poll() is None, proc.communicate()[0][-2000:]  # it exited: say why
        page.goto(url + "/web")
        page.wait_for_selector("#action-form > *")
        page.click("#reset")
        # an env's first reset may import its library (textarena's 2048 took over 15 s under load)
        page.wait_for_selector("#history tbody tr", timeout=45_000)
        assert page.inner_text("#action-error") == ""
        assert page.inner_text("#done") == "false"
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert f"playground {url}/web" in out


def _up(url: str) -> bool:
    try:
        return httpx.get(url + "/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.parametrize(
    ("host", "flag", "expected"),
    [("127.0.0.1", None, True), ("127.0.0.1", False, False), ("0.0.0.0", None, False)]
    + [("0.0.0.0", True, True)],
)
def test_serve_turns_the_page_on_for_loopback_only_by_default(
    host: str, flag: bool | None, expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    from openenv_train.cli.serve_local import playground_on
    from openenv_train.server.web import WEB_ENV, web_enabled

    # setenv, not delenv: a delenv of an unset variable records nothing to undo, and
    # playground_on's value leaked into the tests after this one (the page on where asked off)
    monkeypatch.setenv(WEB_ENV, "0")
    assert web_enabled(None) is False  # create_app leaves it off unless asked
    assert playground_on(argparse.Namespace(host=host, web=flag)) is expected
    assert web_enabled(None) is expected  # what the app uvicorn imports then reads
    monkeypatch.setenv(WEB_ENV, "yes please")
    with pytest.raises(ValueError, match=WEB_ENV):
        web_enabled(None)


def test_the_page_shows_the_servers_live_figures(serve_app: Any, page: Any) -> None:
    server = serve_app(blackjack_app(web=True))
    page.goto(server.url + "/web")
    page.fill("#seed", "7")
    page.click("#reset")
    page.wait_for_selector("#history tbody tr")
    page.select_option("#field-action", label="1")
    page.click("#step")
    page.wait_for_function("document.getElementById('done').textContent === 'true'")
    page.click("#fig-refresh")
    page.wait_for_function("document.getElementById('fig-steps').textContent === '1'")
    assert page.inner_text("#fig-sessions") == "1 / 4096"  # the page's own session
    assert float(page.inner_text("#fig-step-ms")) >= 0
