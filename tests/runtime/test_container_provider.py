"""``ContainerProvider`` against the real dockerd and the real Podman service."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from typing import Any

import httpx
import pytest
from rt_containers import ENGINES, ROOT

from openenv_train.client import MCPToolClient
from openenv_train.core.errors import ServerStartError
from openenv_train.runtime import ContainerProvider, start_servers
from openenv_train.runtime import container_engine as ce
from openenv_train.runtime.errors import EngineError

pytestmark = pytest.mark.usefixtures("no_leaks")


@pytest.mark.parametrize("engine", ENGINES)
def test_hardened_by_default_and_stop_is_verified(engine, image_of):
    p = ContainerProvider(image_of(engine), engine=engine)
    with p:
        assert p.base_url.startswith("http://127.0.0.1:")
        assert httpx.get(p.base_url + "/health").json()["status"] == "healthy"
        h = p.hardening()
        assert h.cap_bnd == 0 and h.user == "10001:10001" and h.problems() == []
        assert [ip for ip, _ in h.published] == ["127.0.0.1"]
        container = p._client.containers.get(p.name)
        out = _probe(container, ["sh", "-c", "touch /opt/x 2>/dev/null; echo $? $(id -u)"])
        assert out.split() == ["1", "10001"]  # read-only root, non-root user
        assert container.exec_run(["sh", "-c", "touch /tmp/ok"])[0] == 0  # the tmpfs
        labels = p._client.api.inspect_container(p.name)["Config"]["Labels"]
        assert (
            labels[ce.LABEL_OWNER_PID] == str(os.getpid()) and labels[ce.LABEL_RUN_ID] == p.run_id
        )
        with MCPToolClient(
            p.base_url, mode="simulation"
        ).sync() as client:  # a WebSocket session through the port
            client.reset()
            assert "echo_message" in [t.name for t in client.list_tools()]
    assert ce.list_exact(p._client, p.name) == []
    p.stop()  # idempotent


@pytest.mark.parametrize("engine", ENGINES)
def test_each_default_is_relaxed_by_name(engine, image_of):
    with ContainerProvider(image_of(engine), engine=engine, relax={"read_only", "limits"}) as p:
        problems = " ".join(p.hardening().problems())
        assert "writable" in problems and "memory" in problems  # (Podman keeps its own pids cap)
        assert "runs as root" not in problems and "capability" not in problems
    with pytest.raises(ValueError, match="relax: unknown"):
        ContainerProvider("x", relax={"readonly"})


@pytest.mark.parametrize("engine", ENGINES)
def test_a_crashing_server_reports_exit_code_and_logs_and_is_removed(engine, image_of):
    p = ContainerProvider(image_of(engine), engine=engine, app="no_such_env.server.app:app")
    with pytest.raises(ServerStartError) as err:
        p.start()
    msg = str(err.value)
    assert "exited before it became healthy" in msg and "exit code 1" in msg
    assert "no_such_env" in msg  # the container's own log lines
    assert ce.list_exact(ce.connect(engine), p.name) == []


def test_a_missing_image_says_how_to_build_it():
    with pytest.raises(ServerStartError, match="openenv-train build"):
        ContainerProvider("openenv-train-test/never-built:nope", engine="docker").start()


def test_an_unreachable_engine_is_an_engine_error():
    with pytest.raises(ce.EngineError, match="not reachable"):
        ContainerProvider("x", engine="unix:///nonexistent/engine.sock").start()


def test_a_health_timeout_stops_the_container(image_of):
    cmd = "import time; time.sleep(60)"
    p = ContainerProvider(
        image_of("docker"), engine="docker", command=["python3", "-c", cmd], startup_timeout=1.5
    )
    with pytest.raises(ServerStartError, match="did not become healthy within"):
        p.start()
    assert ce.list_exact(ce.connect("docker"), p.name) == []


OWNER = textwrap.dedent(
    """
    import sys, time
    from openenv_train.runtime import ContainerProvider
    p = ContainerProvider(sys.argv[1], engine=sys.argv[2])
    p.start()
    print(p.name, flush=True)
    time.sleep(600)
    """
)
NEXT = textwrap.dedent(
    """
    import sys
    from openenv_train.runtime import ContainerProvider
    with ContainerProvider(sys.argv[1], engine=sys.argv[2]):
        pass
    """
)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_sigkilled_owners_container_is_reaped_by_the_next_start(engine, image_of):
    image = image_of(engine)
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, image, engine], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    name = owner.stdout.readline().strip()
    client = ce.connect(engine)
    try:
        assert name and ce.list_exact(client, name) == [name]
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        assert ce.list_exact(client, name) == [name]  # engines do not know the owner died
        nxt = subprocess.run([sys.executable, "-c", NEXT, image, engine], cwd=ROOT, timeout=120)
        assert nxt.returncode == 0
        assert ce.list_exact(client, name) == []
    finally:
        owner.kill()
        if name:
            ce.remove_verified(client, name)


@pytest.mark.parametrize("engine", ENGINES)
def test_start_servers_runs_a_group_of_containers(engine, image_of):
    with start_servers(
        "echo_env.server.app:app", 2, runtime=engine, image=image_of(engine)
    ) as group:
        assert len(set(group.base_urls)) == 2
        assert all(httpx.get(u + "/health").status_code == 200 for u in group.base_urls)
        names = [p.name for p in group]
        assert len({p.run_id for p in group}) == 1
    client = ce.connect(engine)
    assert all(ce.list_exact(client, n) == [] for n in names)


def test_start_servers_names_what_is_missing():
    with pytest.raises(ValueError, match="needs image="):
        start_servers("echo_env.server.app:app", 1, runtime="docker")
    with pytest.raises(ValueError, match="choose one of"):
        start_servers("echo_env.server.app:app", 1, runtime="kubernetes")


@pytest.mark.parametrize("engine", ENGINES)
def test_the_venv_is_in_exactly_one_image_layer(engine, image_of):
    from openenv_train.cli.env_build import image_facts

    facts = image_facts(ce.connect(engine), image_of(engine))
    venv_layers = [h for h in facts.history if "/opt/venv" in h and "COPY" in h]
    assert len(venv_layers) == 1, facts.history
    assert facts.layers >= 2


EGRESS = (
    "import socket, urllib.request\n"
    "try:\n"
    "    urllib.request.urlopen('http://pypi.org', timeout=5); print('open')\n"
    "except Exception as e:\n"
    "    print('blocked', type(e).__name__)\n"
)


REACH = (
    "import socket, sys\n"
    "for host in sys.argv[2:]:\n"
    "    try:\n"
    "        socket.create_connection((host, int(sys.argv[1])), timeout=3).close(); print('reached', host)\n"
    "    except OSError as e:\n"
    "        print('blocked', host, e.errno)\n"
)


def _host_addresses() -> list[str]:
    """Every IPv4 address of this machine but loopback (bridge gateways included)."""
    out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    addrs = [line.split()[3].split("/")[0] for line in out.splitlines()]
    return [a for a in addrs if not a.startswith("127.")]


def _probe(container: Any, argv: list[str]) -> str:
    """A probe's output, run again when the engine lost it (Podman's API now and then returns a
    short exec's exit with none of its output under load; the probes change nothing)."""
    for _ in range(ce.STATUS_READ_TRIES):
        out = container.exec_run(argv)[1].decode()
        if out:
            return out
    return out


@pytest.mark.parametrize("engine", ENGINES)
def test_network_none_reaches_nothing_and_is_still_served(engine, image_of):
    """Issue 22 #5: an "internal" network still reached every address of the host."""
    with socket.create_server(("0.0.0.0", 0)) as listener:
        port = listener.getsockname()[1]
        with (
            ContainerProvider(image_of(engine), engine=engine) as neighbour,
            ContainerProvider(image_of(engine), engine=engine, network="none") as p,
        ):
            assert p.base_url.startswith("http://127.0.0.1:")
            assert httpx.get(p.base_url + "/health").status_code == 200
            with MCPToolClient(
                p.base_url, mode="simulation"
            ).sync() as client:  # a WebSocket session through it
                client.reset()
                assert client.call_tool("echo_message", message="hi") == "hi"
            assert p.hardening().published == ()
            container = p._client.containers.get(p.name)
            out = _probe(container, ["python3", "-c", EGRESS])
            assert out.startswith("blocked"), out
            targets = _host_addresses()
            assert targets, "this machine has no address beyond loopback to try"
            out = _probe(container, ["python3", "-c", REACH, str(port), *targets])
            assert "reached" not in out and out.count("blocked") == len(targets), out
            attrs = neighbour._client.api.inspect_container(neighbour.name)
            nets = attrs["NetworkSettings"]["Networks"].values()
            ips = [n["IPAddress"] for n in nets if n.get("IPAddress")]
            assert ips, attrs["NetworkSettings"]
            out = _probe(container, ["python3", "-c", REACH, "8000", *ips])
            # nor another container's env server
            assert "reached" not in out and out.count("blocked") == len(ips), out
    assert ce.list_exact(ce.connect(engine), p.name) == []


OPEN_SESSION = (
    "import json, os, sys, urllib.request, urllib.error\n"
    "for url in sys.argv[1:]:\n"
    "    for token in (None, os.environ.get('OPENENV_TRAIN_TOKEN')):\n"
    "        headers = {'Content-Type': 'application/json'}\n"
    "        if token:\n"
    "            headers['Authorization'] = 'Bearer ' + token\n"
    "        req = urllib.request.Request(url + '/reset', b'{}', headers)\n"
    "        try:\n"
    "            print('status', urllib.request.urlopen(req, timeout=5).status)\n"
    "        except urllib.error.HTTPError as e:\n"
    "            print('status', e.code)\n"
)


@pytest.mark.parametrize("engine", ENGINES)
def test_containers_of_one_group_cannot_open_sessions_on_each_other(engine, image_of):
    """Issue 22 #5: several containers of one owner each require a token of their own, so one
    (hostile code in it, or its own token) cannot open a session on another's server over the
    shared network, while this process's clients still use every one of them."""
    from openenv_train.runtime.servers import start_container_servers

    with start_container_servers(None, 2, image=image_of(engine), engine=engine) as group:
        a, b = group
        assert a.token and b.token and a.token != b.token
        for p in group:  # our own clients find each server's token by its URL
            with MCPToolClient(p.base_url).sync() as client:
                client.reset()
                assert client.call_tool("echo_message", message="hi") == "hi"
        attrs = b._client.api.inspect_container(b.name)
        ips = [n["IPAddress"] for n in attrs["NetworkSettings"]["Networks"].values()]
        urls = [f"http://{ip}:8000" for ip in ips if ip]
        assert urls, attrs["NetworkSettings"]
        container = a._client.containers.get(a.name)
        out = _probe(container, ["python3", "-c", OPEN_SESSION, *urls])
        statuses = [line.split()[1] for line in out.splitlines() if line.startswith("status")]
        assert statuses and set(statuses) == {"401"}, out  # reached, and refused
        assert httpx.post(b.base_url + "/reset", json={}).status_code == 401


def test_a_token_given_by_the_user_is_kept(image_of):
    from openenv_train.runtime.servers import start_container_servers

    token = "user-chosen-token-0123456789"
    with start_container_servers(None, 2, image=image_of("docker"), token=token) as group:
        assert [p.token for p in group] == [token, token]
        for p in group:
            headers = {"Authorization": f"Bearer {token}"}
            assert httpx.post(p.base_url + "/reset", json={}, headers=headers).status_code == 200
    one = ContainerProvider(image_of("docker"))
    assert one.token is None  # one container alone: as before (loopback-only port, no token)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_host_port_taken_under_the_engine_is_tried_again(engine, image_of):
    """CI saw Podman choose a free host port that another test bound before the engine did.
    Fault injected into the real engine's API: the first start fails as that one did."""
    import docker.errors

    p = ContainerProvider(image_of(engine), engine=engine)
    p._client = ce.connect(engine)
    real_start, starts = p._client.api.start, []

    def start_losing_the_first_race(name: str) -> None:
        starts.append(name)
        if len(starts) == 1:
            raise docker.errors.APIError(
                "500 Server Error: cannot listen on the TCP port: listen tcp4 "
                "127.0.0.1:34721: bind: address already in use"
            )
        real_start(name)

    p._client.api.start = start_losing_the_first_race
    with p:
        assert len(starts) == 2
        assert httpx.get(p.base_url + "/health").json()["status"] == "healthy"
    assert ce.list_exact(ce.connect(engine), p.name) == []


def test_a_pinned_host_port_in_use_fails_at_once_and_names_it(image_of):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        p = ContainerProvider(image_of("docker"), engine="docker", host_port=port)
        with pytest.raises(ServerStartError, match="address already in use"):
            p.start()
    assert ce.list_exact(ce.connect("docker"), p.name) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_an_exec_whose_output_the_engine_lost_is_read_again(engine, image_of):
    """CI saw Podman return ``cat /proc/1/status``'s exit 0 with none of its output. Fault
    injected into the real engine's API: the first read comes back empty."""
    with ContainerProvider(image_of(engine), engine=engine) as p:
        real_exec_start, reads = p._client.api.exec_start, []

        def losing_the_first_output(*args: Any, **kwargs: Any) -> Any:
            out = real_exec_start(*args, **kwargs)
            reads.append(out)
            return b"" if len(reads) == 1 else out

        p._client.api.exec_start = losing_the_first_output
        assert p.hardening().problems() == []
        assert len(reads) >= 2  # read again (under load the engine itself lost one more, once)

        def losing_every_output(*args: Any, **kwargs: Any) -> Any:
            real_exec_start(*args, **kwargs)
            return b""

        p._client.api.exec_start = losing_every_output  # never any output: a clear error
        with pytest.raises(EngineError, match="no CapBnd line 3 times"):
            p.hardening()
