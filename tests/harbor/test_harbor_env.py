"""The harbor env in process (its tools, limits, verifier rule, errors), on real containers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from harbor_env import (
    SHIPPED_TASKS,
    ImageBuildError,
    TaskFormatError,
    TaskRuntime,
    VerifierError,
    load_task,
)
from harbor_env.server.environment import HarborEnv
from harbor_env.verifier import parse_rewards
from harbor_support import BASE_IMAGE, containers_of

from openenv_train.core.errors import InfrastructureError
from openenv_train.core.mcp_types import CallToolAction


async def call(env: HarborEnv, tool: str, **args):
    return await env.step_async(CallToolAction(tool_name=tool, arguments=args))


# ---- the reward-file rule (Harbor's) -----------------------------------------------------------


def test_reward_json_wins_over_reward_txt_and_keeps_every_metric() -> None:
    assert parse_rewards(b'{"reward": 0.5, "style": 1}', b"1") == {"reward": 0.5, "style": 1.0}
    assert parse_rewards(None, b" 0.25\n") == {"reward": 0.25}


@pytest.mark.parametrize(
    "json_text, txt",
    [
        (None, None),
        (None, b""),
        (None, b"abc"),
        (None, b"nan"),
        (b"", None),
        (b"[1]", None),
        (b'{"a": "x"}', None),
        (b'{"a": Infinity}', None),
        (b"{}", None),
        (b"{", b"1"),
    ],
)
def test_a_missing_or_bad_reward_file_is_a_verifier_error_not_a_zero(json_text, txt) -> None:
    with pytest.raises(VerifierError):
        parse_rewards(json_text, txt)
    assert issubclass(VerifierError, InfrastructureError)


# ---- task.toml ---------------------------------------------------------------------------------


def _copy_task(tmp_path: Path, name: str = "hello_file") -> Path:
    dest = tmp_path / "tasks" / name
    shutil.copytree(SHIPPED_TASKS / "hello_file", dest)
    return dest


def test_task_toml_limits_are_read_and_bad_fields_are_named(tmp_path) -> None:
    task = load_task(SHIPPED_TASKS / "hello_file")
    assert (task.cpus, task.memory_mb, task.verifier_timeout_s, task.network) == (
        1.0,
        256,
        60.0,
        False,
    )
    d = _copy_task(tmp_path)
    (d / "task.toml").write_text("[environment]\nmemory_mb = -5\n")
    with pytest.raises(TaskFormatError, match="memory_mb"):
        load_task(d)
    (d / "task.toml").write_text("[verifier]\ntimeout_sec = 'soon'\n")
    with pytest.raises(TaskFormatError, match="timeout_sec"):
        load_task(d)
    (d / "tests" / "test.sh").unlink()
    with pytest.raises(TaskFormatError, match="tests/test.sh"):
        load_task(d)


# ---- tools and limits on real containers -------------------------------------------------------


async def test_tools_run_as_the_tasks_user_without_capabilities_or_network(runtime) -> None:
    env = HarborEnv(runtime)
    obs = await env.reset(task_id="hello_file")
    assert "hello.txt" in obs.instruction and "submit" in obs.tool_names
    out = (
        await call(env, "run", command="id -u; grep CapEff /proc/self/status; ls /sys/class/net")
    ).result
    lines = str(out).split()
    assert lines[0] == "10001" and "0000000000000000" in lines and "eth0" not in lines
    await call(env, "write_file", path="sub/dir/x.txt", content="héllo\n")
    assert (await call(env, "read_file", path="/app/sub/dir/x.txt")).result == "héllo\n"
    bad = await call(env, "read_file", path="/nope")
    assert bad.error is not None and "nope" in bad.error.message
    denied = await call(env, "write_file", path="/etc/passwd", content="x")
    assert denied.error is not None  # the task's user may not write there
    await env.close()


async def test_commands_are_bounded_in_time_and_output(runtime) -> None:
    env = HarborEnv(runtime)
    await env.reset(task_id="hello_file")
    slow = str((await call(env, "run", command="sleep 30", timeout_s=1)).result)
    assert "[killed after 1 s]" in slow
    big = str((await call(env, "run", command="head -c 100000 /dev/zero | tr '\\0' a")).result)
    assert "[output cut at" in big and len(big) < 17 * 1024
    await env.close()


async def test_each_episode_gets_a_fresh_container(runtime) -> None:
    env = HarborEnv(runtime)
    await env.reset(task_id="hello_file")
    first = env.lease.provider.name
    await call(env, "run", command="echo 'Hello, world!' > /app/hello.txt")
    await env.reset(task_id="hello_file")
    assert env.lease.provider.name != first
    out = str((await call(env, "run", command="cat /app/hello.txt")).result)
    assert "No such file" in out  # nothing of the last episode is left
    step = await call(env, "submit")
    assert (step.reward, step.done) == (0.0, True)
    await env.close()


async def test_the_step_budget_ends_the_episode_with_a_grade(runtime) -> None:
    env = HarborEnv(runtime)
    await env.reset(task_id="hello_file", max_steps=1)
    await call(env, "run", command="echo 'Hello, world!' > /app/hello.txt")
    late = await call(env, "run", command="true")
    assert (late.reward, late.done) == (1.0, True)
    with pytest.raises(RuntimeError, match="reset"):
        await call(env, "run", command="true")
    await env.close()


async def test_broken_tasks_raise_infrastructure_errors_never_a_zero(tmp_path, built) -> None:
    d = _copy_task(tmp_path)
    (d / "tests" / "test.sh").write_text("#!/bin/bash\necho 'forgot the reward'\n")
    b = _copy_task(tmp_path, "unbuildable")
    (b / "environment" / "Dockerfile").write_text(
        "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nRUN exit 3\n"
    )
    rt = TaskRuntime(tmp_path / "tasks", base_image=BASE_IMAGE, warm=0)
    try:
        env = HarborEnv(rt)
        await env.reset(task_id="hello_file")
        with pytest.raises(VerifierError, match="forgot the reward"):
            await call(env, "submit")
        assert env.lease is None  # the container went with the failure
        with pytest.raises(ImageBuildError, match="exit"):
            await env.reset(task_id="unbuildable")
        await env.close()
    finally:
        rt.close()
    assert containers_of(rt.run_id) == []
