"""Parsing and verification code fed with what the engines answer.

``recorded/docker20.json`` and ``recorded/podman4.json`` were recorded on this project's machines
(``record_engines.py``); ``docker29_constructed.json`` is the docker20 recording reshaped by
Docker 29's API changes (no Docker 29 engine runs here; see its ``_note``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import docker.errors
import pytest
import requests

from openenv_train.runtime import container_engine as ce

RECORDED = Path(__file__).parent / "recorded"
SHAPES = ["docker20", "docker29_constructed", "podman4"]


def rec(shape: str) -> dict:
    return json.loads((RECORDED / f"{shape}.json").read_text())


@pytest.mark.parametrize("shape", SHAPES)
def test_exact_name_listing_finds_the_container_on_every_engine(shape):
    r = rec(shape)
    assert ce.name_filter(r["name"]) == {"name": [f"^{r['name']}$"]}
    assert ce.names_in_listing(r["list_exact"]) == [r["name"]]
    assert ce.names_in_listing(r["list_after_remove"]) == []


def test_a_slash_name_filter_would_hide_a_leftover_on_podman():
    """Why the filter is ``^NAME$``: Podman matched nothing for ``^/NAME$`` while it existed."""
    assert ce.names_in_listing(rec("podman4")["list_slash"]) == []
    assert ce.names_in_listing(rec("docker20")["list_slash"]) == [rec("docker20")["name"]]


@pytest.mark.parametrize("shape", SHAPES)
def test_hardening_is_read_from_capbnd_not_capdrop(shape):
    r = rec(shape)
    h = ce.hardening_from(r["inspect"], r["proc_status"])
    assert h.cap_bnd == 0 and h.non_root and h.read_only and h.no_new_privileges
    assert h.memory == 1 << 30 and h.pids_limit == 256 and h.nano_cpus == 10**9
    assert all(ip == "127.0.0.1" for ip, _ in h.published) and h.published
    assert h.problems() == []


def test_capdrop_differs_between_engines_so_it_is_never_the_check():
    assert rec("docker20")["inspect"]["HostConfig"]["CapDrop"] == ["ALL"]
    podman = rec("podman4")["inspect"]["HostConfig"]["CapDrop"]
    assert "ALL" not in podman and "CHOWN" in podman


def test_problems_name_every_broken_default():
    r = rec("docker20")
    attrs = json.loads(json.dumps(r["inspect"]))
    attrs["HostConfig"].update(ReadonlyRootfs=False, SecurityOpt=None, Memory=0, PidsLimit=None)
    attrs["Config"]["User"] = ""
    attrs["NetworkSettings"]["Ports"] = {"8000/tcp": [{"HostIp": "0.0.0.0", "HostPort": "1"}]}
    status = r["proc_status"].replace("CapBnd:\t0000000000000000", "CapBnd:\t00000000a80425fb")
    problems = ce.hardening_from(attrs, status).problems()
    for words in (
        "root",
        "0xa80425fb",
        "writable",
        "no-new-privileges",
        "memory",
        "pids",
        "0.0.0.0",
    ):
        assert any(words in p for p in problems), (words, problems)


def test_capbnd_parsing():
    assert ce.cap_bnd("Name:\tx\nCapBnd:\t000001ffffffffff\n") == 0x1FFFFFFFFFF
    with pytest.raises(ValueError, match="CapBnd"):
        ce.cap_bnd("Name:\tx\n")


@pytest.mark.parametrize("shape", SHAPES)
def test_engine_kind_from_version(shape):
    assert ce.is_podman(rec(shape)["version"]) == shape.startswith("podman")


def _api_error(shape: str) -> docker.errors.APIError:
    nf = rec(shape)["not_found"]
    resp = requests.Response()
    resp.status_code = nf["status"]
    resp._content = json.dumps(nf["body"]).encode()
    return docker.errors.NotFound(nf["body"]["message"], response=resp)


class RecordedEngine:
    """Answers ``remove_container`` / ``containers`` with recorded outputs (a stand-in engine)."""

    def __init__(self, remove_error=None, listing=(), down=False):
        self.remove_error, self.listing, self.down = remove_error, list(listing), down
        self.api = self

    def remove_container(self, name, force, v):
        assert force  # never waits for a graceful stop
        if self.down:
            raise requests.exceptions.ConnectionError("connection refused")
        if self.remove_error is not None:
            raise self.remove_error

    def containers(self, all, filters):
        if self.down:
            raise requests.exceptions.ConnectionError("connection refused")
        return self.listing


@pytest.mark.parametrize("shape", SHAPES)
def test_not_found_on_remove_is_gone_by_status_not_text(shape):
    err = _api_error(shape)
    assert ce.status_code(err) == 404
    ce.remove_verified(RecordedEngine(err, rec(shape)["list_after_remove"]), rec(shape)["name"])


@pytest.mark.parametrize("shape", SHAPES)
def test_still_listed_after_removal_is_a_cleanup_error(shape):
    r = rec(shape)
    with pytest.raises(ce.CleanupError, match=r["name"]):
        ce.remove_verified(RecordedEngine(None, r["list_exact"]), r["name"], attempts=2)


def test_an_unreachable_engine_is_an_error_not_a_success():
    with pytest.raises(ce.EngineError):
        ce.remove_verified(RecordedEngine(down=True), "x")
    with pytest.raises(ce.EngineError):
        ce.list_exact(RecordedEngine(down=True), "x")
    with pytest.raises(ce.EngineError, match="not reachable"):
        ce.connect("unix:///nonexistent/engine.sock")


def test_engine_names_and_urls():
    assert ce.engine_url("podman") == os.environ.get("OPENENV_TRAIN_PODMAN_URL", ce.PODMAN_SOCKET)
    assert ce.engine_url("tcp://127.0.0.1:2375") == "tcp://127.0.0.1:2375"
    with pytest.raises(ValueError, match="engine="):
        ce.engine_url("dokcer")


def test_orphans_are_containers_whose_owner_died():
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = dead.stdout.strip()
    me = ce.owner_labels("run1")
    host = socket.gethostname()

    def item(name, **labels):
        return {"Names": [f"/{name}"], "Labels": {**me, **labels}}

    listing = [
        item("alive"),
        item("dead", **{ce.LABEL_OWNER_PID: dead_pid}),
        item("reused-pid", **{ce.LABEL_OWNER_START: "1"}),  # same pid, another process
        item("other-host", **{ce.LABEL_OWNER_PID: dead_pid, ce.LABEL_OWNER_HOST: host + "-x"}),
        item("not-ours", **{ce.LABEL_PROJECT: "someone-else", ce.LABEL_OWNER_PID: dead_pid}),
    ]
    assert ce.orphans(listing) == ["dead", "reused-pid"]


def test_an_internal_network_must_have_a_host_address_to_serve_from():
    """Recorded ``inspect_network`` IPAM of an internal network: Docker 20.10, then Podman 4.3."""
    docker = {
        "Internal": True,
        "IPAM": {"Config": [{"Subnet": "172.20.0.0/16", "Gateway": "172.20.0.1"}]},
    }
    podman = {
        "Internal": True,
        "IPAM": {"Config": [{"Subnet": "10.89.0.0/24", "Gateway": "<nil>"}]},
    }
    assert ce.host_gateway(docker) == "172.20.0.1"
    assert ce.host_gateway(podman) is None


def test_the_framework_pyproject_staged_into_an_image_parses_with_every_requirement() -> None:
    """A requirement with an environment marker carries quotes (``python_version < "3.11"``): the
    staged pyproject must still be TOML, or every env image build fails inside pip."""
    import tomllib

    from openenv_train.cli.env_build import _framework_pyproject
    from openenv_train.runtime.package_requirements import own_requirements

    project = tomllib.loads(_framework_pyproject())["project"]
    wanted = own_requirements()
    assert project["dependencies"] == wanted
    assert any(";" in r for r in wanted)  # the case that broke it is still there


def test_the_staged_requirements_hold_every_dependency_of_env_and_framework(tmp_path) -> None:
    """The image installs ``requirements.txt`` in its own layer, then both packages with
    ``--no-deps``: it must list the env's dependencies, openenv-train's own with the extras the
    env names (never openenv-train itself: no index has it), and both build backends."""
    from packaging.requirements import Requirement

    from openenv_train.cli.env_build import FRAMEWORK_BUILD, stage_context
    from openenv_train.runtime.package_requirements import own_requirements

    root = Path(__file__).parents[2] / "envs"
    for env, extra in (("openspiel_games_env", None), ("openenv_echo_env", "fastmcp")):
        staged = stage_context(root / env, tmp_path / env) / ".openenv_train" / "requirements.txt"
        lines = staged.read_text().split("\n")
        names = {Requirement(r).name.lower().replace("_", "-") for r in lines if r}
        assert "openenv-train" not in names
        assert FRAMEWORK_BUILD in lines and any(r.startswith("setuptools>=77") for r in lines)
        assert set(own_requirements()) <= set(lines)
        if extra:
            assert set(own_requirements([extra])) <= set(lines) and "fastmcp" in names
        else:
            assert "open-spiel" in names
