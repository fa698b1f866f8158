"""RayServerGroup on a real 3-node Ray cluster: placement, health, replacement, scaling, cleanup."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from blackjack_env import BlackjackEnv
from ray_helpers import APP, node_id_with, wait_gone
from server_helpers import wait_until

from openenv_train.core.errors import ServerStartError
from openenv_train.runtime.health import healthy
from openenv_train.runtime.ray_cluster import unplaced_requests
from openenv_train.runtime.ray_fleet import RayServerGroup, start_ray_servers

pytestmark = pytest.mark.ray


def play_reset(url: str) -> None:
    with BlackjackEnv(base_url=url).sync() as env:
        assert env.reset(seed=1).observation.player_total > 0


def test_servers_spread_over_nodes_and_serve(cluster, no_leaks):
    with start_ray_servers(APP, 3, cpus_per_server=0.25) as fleet:
        assert len(set(fleet.node_ids)) == 3, fleet.node_ids  # one per node: SPREAD
        assert len(set(fleet.base_urls)) == 3
        for url in fleet.base_urls:
            assert url.startswith("http://127.0.0.1:")  # loopback by default
            play_reset(url)
        pids = [s.pid for s in fleet.servers]
    assert not wait_gone(pids), "stop() left server processes"
    assert fleet.base_urls == []
    fleet.stop()  # idempotent


def test_pinned_by_node_id_and_by_custom_resource(cluster, no_leaks):
    node_b = node_id_with("node_b")
    with RayServerGroup(APP, cpus_per_server=0.1, placement=[node_b]).start(2) as fleet:
        assert fleet.node_ids == [node_b, node_b]
    with RayServerGroup(APP, cpus_per_server=0.1, resources={"node_a": 1}).start(2) as fleet:
        assert fleet.node_ids == [node_id_with("node_a")] * 2
        assert all(healthy(u, 2.0) for u in fleet.base_urls)


def test_dead_server_detected_and_replaced(cluster, no_leaks):
    import ray

    with RayServerGroup(APP, cpus_per_server=0.1, health_timeout=0.5).start(3) as fleet:
        assert fleet.dead() == [] and fleet.heal() == 0
        hung = fleet.servers[2]
        os.kill(hung.pid, signal.SIGSTOP)  # runs, answers nothing: dead at the third check
        try:
            assert [fleet.dead(), fleet.dead(), fleet.dead()] == [[], [], [2]]
        finally:
            os.kill(hung.pid, signal.SIGCONT)
        assert fleet.dead() == [] and hung.failed_checks == 0  # it answered: counted afresh
        victim = fleet.servers[1]
        ray.kill(victim.actor, no_restart=True)  # the actor dies: its server process dies with it
        assert not wait_gone([victim.pid]), "the server outlived its actor"
        assert fleet.dead() == [1]
        assert fleet.heal() == 1
        assert len(fleet) == 3 and victim.base_url not in fleet.base_urls
        assert fleet.stats == {"servers_started": 4, "servers_dead": 1, "servers_replaced": 1}
        for url in fleet.base_urls:
            play_reset(url)


def test_a_placed_replacement_slow_to_start_is_waited_for(cluster, no_leaks, tmp_path):
    flag = tmp_path / "slow"
    env = {
        "PYTHONPATH": str(Path(__file__).parent),
        "OPENENV_TRAIN_TEST_SLOW_FLAG": str(flag),
        "OPENENV_TRAIN_TEST_SLOW_START_S": "20",
    }
    app = "slow_start_app:app"
    with RayServerGroup(app, cpus_per_server=0.1, env=env, replace_timeout=3).start(1) as fleet:
        flag.touch()  # from now on a server takes 20 s to start: longer than replace_timeout
        victim = fleet.servers[0]
        os.kill(victim.pid, signal.SIGKILL)
        assert not wait_gone([victim.pid])  # the kill is asynchronous: probe once it is gone
        assert fleet.dead() == [0]
        started = time.monotonic()
        assert fleet.heal() == 1  # placed at once, so waited for past replace_timeout
        assert time.monotonic() - started >= 20
        play_reset(fleet.base_urls[0])


def test_fleet_scales_up_and_down(cluster, no_leaks):
    with RayServerGroup(APP, cpus_per_server=0.1).start(2) as fleet:
        fleet.scale(5)
        assert len(fleet.base_urls) == 5 and len(set(fleet.base_urls)) == 5
        for url in fleet.base_urls:
            play_reset(url)
        gone = fleet.servers[1:]
        fleet.scale(1)
        assert len(fleet) == 1
        assert not wait_gone([s.pid for s in gone]), "scale-down left server processes"
        assert not any(healthy(s.base_url, 0.5) for s in gone)
        play_reset(fleet.base_urls[0])
        with pytest.raises(ValueError, match="at least one server"):
            fleet.scale(0)


def test_unplaceable_request_fails_clearly_and_leaves_nothing(cluster, no_leaks):
    # Ray reports the request it cannot place (what tells it from a placed one still starting)
    shape = {"CPU": 0.1, "no_such_node": 1}
    fleet = RayServerGroup(APP, cpus_per_server=0.1, resources={"no_such_node": 1})
    actor = fleet._new_actor(replacing=True)
    wait_until(lambda: unplaced_requests(shape) == 1, 20, "Ray to report the waiting request")
    fleet._kill_actors([actor])
    wait_until(lambda: unplaced_requests(shape) == 0, 20, "the report to drop the killed actor")
    fleet = RayServerGroup(APP, resources={"no_such_node": 1}, startup_timeout=1)
    with pytest.raises(ServerStartError, match="resources"):
        fleet._start(1, timeout=2)
    # a replacement Ray cannot place is given up at its timeout, not waited for to start
    fleet = RayServerGroup(APP, resources={"no_such_node": 1}, startup_timeout=120)
    started = time.monotonic()
    assert fleet._start(1, timeout=2, all_or_none=False) == []
    assert time.monotonic() - started < 60


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"placement": "everywhere"}, "placement"),
        ({"placement": []}, "placement"),
        ({"cpus_per_server": -1}, "cpus_per_server"),
        ({"bind_host": "0.0.0.0"}, "token"),
        ({"app": "not-an-import-path"}, "app must be"),
    ],
)
def test_bad_options_name_the_field(kwargs, match, monkeypatch):
    monkeypatch.delenv("OPENENV_TRAIN_TOKEN", raising=False)
    args = {"app": APP, **kwargs}
    with pytest.raises(ValueError, match=match):
        RayServerGroup(args.pop("app"), **args)


def test_non_loopback_bind_takes_the_token_into_the_server_env(monkeypatch):
    monkeypatch.setenv("OPENENV_TRAIN_TOKEN", "s3cret")
    fleet = RayServerGroup(APP, bind_host="0.0.0.0")  # nothing started: only the contract
    assert fleet.token == "s3cret" and fleet.env["OPENENV_TRAIN_TOKEN"] == "s3cret"


@pytest.mark.parametrize(
    ("ray_section", "match"),
    [
        ({"address": "headnode"}, r"env\.ray\.address.*no port"),
        ({"cpus_per_servers": 1}, r"env\.ray\.cpus_per_servers: unknown key"),
        ({"rollout_workers": -1}, r"env\.ray\.rollout_workers"),
    ],
)
def test_recipe_ray_settings_fail_at_start_naming_the_key(ray_section, match):
    from openenv_train.recipes.grpo_blackjack.config import parse_config
    from openenv_train.training.config import ConfigError

    with pytest.raises(ConfigError, match=match):
        parse_config({"env": {"runtime": "ray", "ray": ray_section}})


def test_recipe_ray_settings_become_fleet_options():
    from openenv_train.recipes.grpo_blackjack.config import parse_config

    cfg = parse_config({"env": {"runtime": "ray", "ray": {"address": "auto", "placement": "pack"}}})
    opts = cfg.env.ray.fleet_options()
    assert opts["address"] == "auto" and opts["placement"] == "pack"
    assert opts["bind_host"] == "127.0.0.1" and opts["cpus_per_server"] == 1.0
