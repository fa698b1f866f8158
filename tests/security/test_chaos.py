"""The chaos benchmark's short version (issue 35): coding_env episodes against a pool of
Docker containers while a server is SIGKILLed, a container is killed, its network cut and it is
frozen, one fault every 14 s (84 s in all: the episodes run flat out, so every second of it is
CPU the rest of the suite waits for). No episode may be lost, no infrastructure failure may be scored as
a reward, and throughput must come back after every fault. The engine restart is refused here
(a shared engine) and says so."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_a_fault_every_14_s_loses_nothing_and_recovers() -> None:
    import chaos

    args = chaos.main.__globals__["argparse"].Namespace(
        engine="docker",
        servers=2,
        workers=2,
        minutes=1.4,
        fault_every=14.0,
        outage=5.0,
        retries=5,
        faults=",".join(chaos.FAULTS),
        allow_restart=False,
        # The test shares the CPU with the rest of the suite, whose load changes from one 3-s
        # window to the next; the benchmark run alone holds the 80% bar (docs/benchmarks.md).
        recover_at=0.5,
    )
    report = chaos.run(args, log=lambda _m: None)
    table = chaos.table(report)
    assert report.episodes > 0 and report.baseline_eps > 0, table
    assert report.lost == 0, table
    assert report.infra_scored_as_reward == 0, table
    injected = [f for f in report.faults if not f.skipped]
    assert {f.kind for f in injected} >= {"server_sigkill", "container_kill", "env_stall"}, table
    assert all(f.recover_s is not None for f in injected), table
    # Throughput alone can look recovered while one server carries the load: the pool must be
    # whole again, and a killed container replaced, before the next fault.
    assert all(f.pool_after is not None and f.pool_after >= args.servers for f in injected), table
    killed = [f for f in injected if f.kind in ("server_sigkill", "container_kill")]
    assert killed and all(f.replaced for f in killed), table
    restart = [f for f in report.faults if f.kind == "engine_restart"]
    assert all("refused" in f.skipped for f in restart), table
