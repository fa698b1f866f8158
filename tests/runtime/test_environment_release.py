"""TRL's ``environment_factory`` never calls ``close()``: our classes release sessions and servers."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
import time

import httpx
import pytest
from rt_containers import ROOT, engine_client
from transformers import TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_callback import CallbackHandler

from openenv_train.runtime import container_engine as ce
from openenv_train.runtime import start_servers
from openenv_train.training import make_environment_class, release_callback

pytestmark = pytest.mark.usefixtures("no_leaks")
ECHO = "echo_env.server.app:app"


def test_train_end_closes_every_session_and_stops_owned_servers(tmp_path):
    group = start_servers(ECHO, 2)
    cls = make_environment_class(group, own_servers=True)
    envs = [cls() for _ in range(4)]
    for env in envs:
        env.reset()
    active = sum(httpx.get(u + "/health").json()["active_sessions"] for u in group.base_urls)
    assert active == 4
    urls = list(group.base_urls)
    handler = CallbackHandler([release_callback(cls)], None, None, None, None)
    args = TrainingArguments(output_dir=str(tmp_path), report_to=[])
    handler.on_train_end(args, TrainerState(), TrainerControl())  # what Trainer.train() calls
    assert group.base_urls == [] and all(p.pid is None for p in group)
    for u in urls:
        with pytest.raises(httpx.HTTPError):
            httpx.get(u + "/health", timeout=2)


def test_release_is_not_offered_to_the_model_as_a_tool():
    with start_servers(ECHO, 1) as group:
        cls = make_environment_class(group)
        tools = [n for n, _ in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")]
        assert "release_all" not in tools and "echo_message" in tools  # TRL's own discovery


def test_sessions_close_at_train_end_while_servers_stay_if_not_owned():
    with start_servers(ECHO, 1) as group:
        cls = make_environment_class(group)
        env = cls()
        env.reset()
        assert httpx.get(group.base_urls[0] + "/health").json()["active_sessions"] == 1
        cls.release_all()
        for _ in range(50):
            if not httpx.get(group.base_urls[0] + "/health").json()["active_sessions"]:
                break
            time.sleep(0.1)
        assert httpx.get(group.base_urls[0] + "/health").json()["active_sessions"] == 0


CRASHING = textwrap.dedent(
    """
    import sys
    from openenv_train.runtime import start_servers
    from openenv_train.training import make_environment_class
    group = start_servers("echo_env.server.app:app", 1, runtime="docker", image=sys.argv[1])
    cls = make_environment_class(group, own_servers=True)
    env = cls(); env.reset()
    print(group[0].name, flush=True)
    raise RuntimeError("the training run crashed before on_train_end")
    """
)


def test_the_exit_hook_stops_containers_of_a_crashed_run(image_of):
    proc = subprocess.run(
        [sys.executable, "-c", CRASHING, image_of("docker")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "crashed before on_train_end" in proc.stderr
    name = proc.stdout.strip()
    assert name and ce.list_exact(engine_client("docker"), name) == []
