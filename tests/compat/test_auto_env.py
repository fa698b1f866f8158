"""OpenEnv's ``AutoEnv.from_env`` / ``AutoAction.from_env`` (and ``from_hub``, ``skip_install``) on
installed env packages, real servers, a local image and this machine's missing hub."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

import pytest
from blackjack_env.client import BlackjackEnv
from blackjack_env.models import BlackjackAction
from echo_env.client import EchoEnv

from openenv_train.catalog import (
    UnknownEnvError,
    env_names,
    get_entry,
    hub_repo_id,
    installed_version,
    reset_discovery,
)
from openenv_train.client import GenericAction
from openenv_train.openenv import AutoAction, AutoEnv, GenericEnvClient, HubUnreachableError
from openenv_train.openenv.auto import reachable
from openenv_train.runtime import container_engine as ce

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from rt_containers import BASE_IMAGE, IMAGE_PREFIX, ROOT  # noqa: E402

DEAD = "http://127.0.0.1:9"  # nothing listens on the discard port


# ---- AutoAction -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "blackjack",
        "blackjack_env",
        "blackjack-env",
        "openenv/blackjack-env",
        "https://huggingface.co/spaces/openenv/blackjack_env",
    ],
)
def test_action_class_from_every_spelling_of_an_installed_env(name: str) -> None:
    assert AutoAction.from_env(name) is BlackjackAction
    assert AutoAction.from_hub(name) is BlackjackAction


def test_skip_install_gives_generic_action_for_any_name() -> None:
    for name in ("nobody/anything", "echo", "not-a-real-env"):
        assert AutoAction.from_env(name, skip_install=True) is GenericAction
    assert AutoAction.from_hub("nobody/anything", skip_install=True)(code="x") == {"code": "x"}


def test_a_hub_id_that_is_not_installed_names_the_fix() -> None:
    with pytest.raises(UnknownEnvError) as err:
        AutoAction.from_env("nobody/not-installed-env")
    assert isinstance(err.value, ValueError)  # what OpenEnv's callers catch
    text = str(err.value)
    assert "'not_installed_env'" in text and "pip install" in text and "skip_install=True" in text
    with pytest.raises(UnknownEnvError, match="installed envs: .*blackjack"):
        AutoEnv.from_env("no_such_env")
    assert hub_repo_id("echo") is None
    assert hub_repo_id("https://huggingface.co/spaces/org/echo-env/") == "org/echo-env"


def test_env_info_and_listings(capsys: pytest.CaptureFixture[str]) -> None:
    assert AutoEnv.get_env_class("openenv/blackjack-env") is BlackjackEnv
    info = AutoEnv.get_env_info("blackjack-env")
    assert info["env_key"] == "blackjack" and info["name"] == "blackjack_env"
    assert info["package"] == "openenv-train-blackjack-env"
    assert info["version"] == metadata.version("openenv-train-blackjack-env")
    assert (info["env_class"], info["action_class"]) == ("BlackjackEnv", "BlackjackAction")
    assert info["default_image"] == "openenv-train/blackjack_env:latest"
    action = AutoAction.get_action_info("blackjack")
    assert (action["module"], action["action_class"]) == ("blackjack_env.client", "BlackjackAction")
    AutoEnv.list_environments()
    AutoAction.list_actions()
    out = capsys.readouterr().out
    assert "  blackjack\n" in out and "blackjack: blackjack_env.models:BlackjackAction" in out


def test_by_name_lookups_are_the_catalogs() -> None:
    assert AutoEnv.from_name("blackjack") is get_entry("blackjack").client() is BlackjackEnv
    assert AutoEnv.from_name("blackjack_env") is BlackjackEnv  # the package name works too
    assert AutoEnv.app("blackjack") == "blackjack_env.server.app:app"
    assert AutoAction.from_name("blackjack") is BlackjackAction
    assert AutoEnv.names() == env_names()
    with pytest.raises(UnknownEnvError, match="installed envs"):
        AutoEnv.from_name("blackjak")


def test_factories_are_not_instantiated() -> None:
    with pytest.raises(TypeError, match="from_env"):
        AutoEnv()
    with pytest.raises(TypeError, match="from_env"):
        AutoAction()


# ---- AutoEnv: installed packages and running servers ---------------------------------------------


def test_from_env_serves_the_installed_package_and_stops_it_on_close() -> None:
    env = AutoEnv.from_env("blackjack", wait_timeout=60)
    assert type(env) is BlackjackEnv and reachable(env.base_url)
    with env.sync() as blocking:
        blocking.reset(seed=3)
        assert blocking.step(BlackjackAction(action=1)).observation.player_cards
    assert not reachable(env.base_url)  # the server this call started stopped with the client


def test_from_env_connects_to_a_running_base_url(echo_url: str) -> None:
    with AutoEnv.from_hub("openenv/echo-env", base_url=echo_url).sync() as env:
        assert type(env.async_client) is EchoEnv  # the hub id named the installed package
        env.reset()
        assert env.call_tool("echo_message", message="hi") == "hi"
    generic = AutoEnv.from_env("anything", base_url=echo_url, skip_install=True)
    assert type(generic) is GenericEnvClient and generic.base_url == echo_url


def test_a_base_url_that_does_not_answer() -> None:
    with pytest.raises(ConnectionError, match="Server not available at http://127.0.0.1:9"):
        AutoEnv.from_env("echo", base_url=DEAD, skip_install=True)
    # a remote address that never answers: the probe gives up after its timeout
    with pytest.raises(ConnectionError, match="Server not available at http://192.0.2.1:8000"):
        AutoEnv.from_env("echo", base_url="http://192.0.2.1:8000")


def test_skip_install_with_a_plain_name_needs_a_server_or_an_image() -> None:
    with pytest.raises(ValueError, match="skip_install=True.*base_url.*docker_image"):
        AutoEnv.from_env("echo", skip_install=True)


def test_skip_install_of_a_hub_id_without_the_hub_names_the_fix() -> None:
    """This machine reaches no hub: the Space probe fails, no image can be pulled."""
    with pytest.raises(HubUnreachableError) as err:
        AutoEnv.from_env("nobody/not-installed-env", skip_install=True, wait_timeout=30)
    text = str(err.value)
    assert "nobody/not-installed-env" in text and "base_url=" in text
    assert "registry.hf.space/nobody-not-installed-env" in text and "openenv-train build" in text


# ---- AutoEnv: a local image ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def echo_image() -> str:
    """The echo env's image on Docker (built once; a cached build when the runtime tests ran)."""
    from openenv_train.cli.env_build import build_image

    tag = f"{IMAGE_PREFIX}/echo_env:latest"
    build_image(ROOT / "envs" / "echo_env", tag, base_image=BASE_IMAGE, engine="docker")
    return tag


def test_a_hub_id_resolves_to_its_local_image(echo_image: str) -> None:
    client = ce.connect("docker", timeout=10)
    hub_name = "registry.hf.space/oe-auto-test-echo-env"
    client.images.get(echo_image).tag(hub_name, "latest")
    try:
        env = AutoEnv.from_env("oe-auto-test/echo-env", env_vars={"GREETING": "x"})
        with env.sync() as blocking:
            assert type(env) is EchoEnv
            blocking.reset()
            assert blocking.call_tool("echo_message", message="boxed") == "boxed"
        assert not reachable(env.base_url)  # the container stopped with the client
    finally:
        client.images.remove(f"{hub_name}:latest")


def test_skip_install_with_a_docker_image(echo_image: str) -> None:
    env = AutoEnv.from_env("echo", docker_image=echo_image, skip_install=True)
    with env.sync() as blocking:
        assert type(env) is GenericEnvClient
        blocking.reset()
        result = blocking.step(
            {"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "raw"}}
        )
        assert result.observation


# ---- the package-version helper ------------------------------------------------------------------


def test_installed_version_reads_the_metadata() -> None:
    assert installed_version() == metadata.version("openenv-train")
    assert installed_version("no-such-distribution", "openenv-train") == installed_version()
    assert installed_version("no-such-distribution") == "0.0.0"
    reset_discovery()  # harmless at any time; lookups after it still work
    assert AutoAction.from_env("blackjack") is BlackjackAction
