"""The chaos benchmark's short version (issue 35): coding_env episodes against a pool of
Docker containers while a server is SIGKILLed, a container is killed, its network cut and it is
frozen. No episode may be lost, no infrastructure failure may be scored as a reward, and after
every fault the pool must be whole again (a killed container replaced) and serving episodes
before the next one comes. The faults follow recovery, not a clock: on a machine the rest of the
suite loads, a replacement container took longer than a fixed 14-s window, and a throughput bar
measured that load as much as the pool. The engine restart is refused here (a shared engine)
and says so."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

#: the longest a fault may keep the pool short: a replacement container's start on a loaded
#: 2-core machine (20 s seen) with room to spare; about 2 s on a quiet one
RECOVERY_BOUND_S = 90.0


def test_each_fault_loses_nothing_and_the_pool_recovers_before_the_next() -> None:
    import chaos

    args = chaos.main.__globals__["argparse"].Namespace(
        engine="docker",
        servers=2,
        workers=2,
        minutes=0.0,  # unused: each fault once
        fault_every=4.0,  # the episodes run between faults, 4 s after the pool recovered
        outage=5.0,
        retries=5,
        faults=",".join(chaos.FAULTS),
        allow_restart=False,
        recover_at=0.8,  # reported only: the benchmark run alone holds this bar
        until_recovered=RECOVERY_BOUND_S,
    )
    report = chaos.run(args, log=lambda _m: None)
    table = chaos.table(report)
    assert report.episodes > 0 and report.baseline_eps > 0, table
    assert report.lost == 0, table
    assert report.infra_scored_as_reward == 0, table
    injected = [f for f in report.faults if not f.skipped]
    every = {"server_sigkill", "container_kill", "network_cut", "env_stall"}
    assert {f.kind for f in injected} >= every, table
    # Whole again (a killed container replaced: only a new one brings the pool back to size)
    # and serving a round of episodes, within the bound.
    assert all(f.recover_s is not None for f in injected), table
    assert all(f.pool_after is not None and f.pool_after >= args.servers for f in injected), table
    killed = [f for f in injected if f.kind in ("server_sigkill", "container_kill")]
    assert killed and all(f.replaced for f in killed), table
    restart = [f for f in report.faults if f.kind == "engine_restart"]
    assert all("refused" in f.skipped for f in restart), table
