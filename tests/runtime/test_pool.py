"""``EnvPool``: warm servers by lease, on local processes and on containers."""

from __future__ import annotations

import gc
import os
import signal
import threading
import time

import httpx
import pytest

from openenv_train.client import MCPToolClient
from openenv_train.rollout.engine import base_urls_of
from openenv_train.runtime import ContainerProvider, EnvPool, LocalProcessProvider
from openenv_train.runtime.env_pool import PoolClosedError

pytestmark = pytest.mark.usefixtures("no_leaks")
ECHO = "echo_env.server.app:app"


def local_pool(**kw) -> EnvPool:
    kw.setdefault("check_interval", 0.1)
    return EnvPool(lambda: LocalProcessProvider(ECHO), **kw)


def wait_for(cond, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def test_acquire_hands_out_a_healthy_server_and_release_returns_it():
    with local_pool(min_size=2) as pool:
        a, b = pool.acquire(), pool.acquire()
        assert a.base_url != b.base_url and set(pool.base_urls) == {a.base_url, b.base_url}
        assert httpx.get(a.base_url + "/health").status_code == 200
        with pytest.raises(TimeoutError, match="max_size=2"):
            pool.acquire(timeout=0.3)
        a.release()
        a.release()  # idempotent
        wait_for(lambda: pool.stats()["idle"] == 1)
        with pool.acquire() as c:
            assert c.base_url == a.base_url
    with pytest.raises(PoolClosedError):
        pool.acquire()


def test_a_server_with_open_sessions_is_not_handed_out_until_they_close():
    with local_pool(min_size=1, drain_timeout=30) as pool:
        lease = pool.acquire()
        client = MCPToolClient(lease.base_url).sync()
        client.connect()
        client.reset()
        lease.release()
        assert pool.stats()["draining"] == 1
        with pytest.raises(TimeoutError):  # the checks (every 0.1 s) see its open session
            pool.acquire(timeout=0.8)
        assert pool.stats()["draining"] == 1
        client.close()
        assert pool.acquire(timeout=10).base_url == lease.base_url


def test_a_dead_server_is_replaced_in_the_background():
    with local_pool(min_size=1) as pool:
        with pool.acquire() as lease:
            pid = lease.provider.pid
        os.killpg(pid, signal.SIGKILL)
        wait_for(lambda: pool.replaced == 1 and pool.stats()["idle"] == 1)
        with pool.acquire() as lease:
            assert lease.provider.pid != pid
            assert httpx.get(lease.base_url + "/health").status_code == 200


def test_a_server_slow_to_answer_is_kept_and_one_that_stays_unresponsive_is_replaced():
    """A loaded machine can hold one ``/health`` answer past the check's 1-s timeout: two failed
    checks in a row keep the server; the third replaces it (its process still runs: hung)."""
    with local_pool(min_size=1, unhealthy_after=3) as pool:
        with pool.acquire() as lease:
            pid = lease.provider.pid
        os.killpg(pid, signal.SIGSTOP)  # frozen 1.5 s: at most two checks time out
        time.sleep(1.5)
        os.killpg(pid, signal.SIGCONT)
        with pool.acquire(timeout=10) as lease:
            assert lease.provider.pid == pid and pool.replaced == 0
        os.killpg(pid, signal.SIGSTOP)  # frozen for good: three failed checks, then replaced
        wait_for(lambda: pool.replaced == 1 and pool.stats()["idle"] == 1)
        with pool.acquire() as lease:
            assert lease.provider.pid != pid


def test_a_server_whose_stop_failed_is_stopped_on_a_later_check():
    """An engine restarting while the pool retires a container: its stop fails, and the pool
    used to forget it (the container stayed behind). Stand-in: a real local server whose first
    stop raises as an unreachable engine does (restarting the engine would stop the containers
    of every other test running beside this one)."""
    from openenv_train.runtime.errors import EngineError

    failures = [EngineError("Cannot connect to the Docker daemon")]

    class EngineDownOnce(LocalProcessProvider):
        def stop(self) -> None:
            if failures:
                raise failures.pop()
            super().stop()

    with EnvPool(
        lambda: EngineDownOnce(ECHO), min_size=0, max_size=1, idle_timeout=0.2, check_interval=0.1
    ) as pool:
        with pool.acquire() as lease:
            provider, pid = lease.provider, lease.provider.pid
        wait_for(lambda: not failures)  # retired as surplus: the first stop failed ...
        wait_for(lambda: pool.stats()["unstopped"] == 0)  # ... and a later check stopped it
        wait_for(lambda: provider.pid is None or not _alive(pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_lease_of_a_crashed_thread_is_reclaimed():
    with local_pool(min_size=1) as pool:
        held = []

        def crash():
            held.append(pool.acquire())  # kept alive by `held`, never released
            raise RuntimeError("caller crashed")

        t = threading.Thread(target=crash)
        t.start()
        t.join()
        wait_for(lambda: pool.reclaimed == 1)
        assert pool.acquire(timeout=10).base_url == held[0].base_url


def test_a_dropped_lease_and_an_expired_lease_are_reclaimed():
    with local_pool(min_size=1, lease_ttl=1.0) as pool:
        pool.acquire()  # dropped at once: its finalizer gives the server back
        gc.collect()
        lease = pool.acquire(timeout=10)  # held past lease_ttl by a live thread
        wait_for(lambda: pool.reclaimed == 1)
        assert pool.acquire(timeout=10).base_url == lease.base_url


def test_the_pool_grows_to_max_while_callers_wait_and_shrinks_when_idle():
    with local_pool(min_size=1, max_size=2, idle_timeout=0.5) as pool:
        a = pool.acquire()
        b = pool.acquire(timeout=30)  # starts a second server
        assert len(pool.base_urls) == 2 and a.base_url != b.base_url
        a.release()
        b.release()
        wait_for(lambda: len(pool.base_urls) == 1)


def test_bad_sizes_name_the_field():
    with pytest.raises(ValueError, match="max_size"):
        EnvPool(lambda: None, min_size=2, max_size=1)
    with pytest.raises(ValueError, match="min_size"):
        EnvPool(lambda: None, min_size=-1)
    with pytest.raises(ValueError, match="unhealthy_after"):
        EnvPool(lambda: None, unhealthy_after=0)


def test_the_rollout_engine_takes_a_pool():
    with local_pool(min_size=2) as pool:
        assert sorted(base_urls_of(pool)) == sorted(pool.base_urls)


def test_a_pool_of_containers(image_of):
    image = image_of("docker")
    with EnvPool(lambda: ContainerProvider(image), min_size=1, max_size=2) as pool:
        with pool.acquire() as lease:
            assert lease.provider.hardening().problems() == []
            with MCPToolClient(lease.base_url).sync() as client:
                client.reset()
