"""Chaos: coding_env episodes against a pool of containers while faults hit them on a schedule.

Workers lease servers from an ``EnvPool`` of ``ContainerProvider`` containers (the hardened
defaults) and play episodes (reset + one step with a correct solution, so every reward must be
1.0). From the first finished episode on, for ``--minutes``, a fault thread hits one container
every ``--fault-every`` seconds, cycling through:

- ``server_sigkill``: the env server process inside the container gets SIGKILL;
- ``container_kill``: the engine kills the whole container with SIGKILL, as the kernel's OOM
  killer does to a container over its memory limit (a stand-in: a real OOM kill picks the
  largest process, not reliably the server);
- ``network_cut``: the container leaves the engine's network for ``--outage`` seconds (Docker);
- ``env_stall``: the container is frozen (``pause``) for ``--outage`` seconds;
- ``engine_restart``: restarting the Docker daemon; refused unless ``--allow-restart``
  (it stops every container of every user of the engine: never on a shared machine).

An episode that fails for an infrastructure reason is retried on another lease (up to
``--retries``); it is *lost* only when every try failed. Reported: episodes done, lost, and
*infrastructure failures scored as reward* (a finished episode whose reward is not 1.0: the
solution is always right), and per fault the throughput dip and the time to recover (until the
3-s rolling throughput is back to 80% of the baseline measured before the first fault).

Usage: python benchmarks/chaos.py [--engine docker] [--servers 3] [--workers 3] [--minutes 20]
       [--fault-every 60] [--outage 8] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coding_env import CodeAction, CodingEnv  # noqa: E402

from openenv_train.runtime import ContainerProvider, EnvPool  # noqa: E402

SOLUTION = "def add(a, b):\n    return a + b"
#: the longest the first episode may take (containers starting on a loaded machine)
WARMUP_S = 300.0
FAULTS = ("server_sigkill", "container_kill", "network_cut", "env_stall", "engine_restart")
_KILL_SERVER = (
    "import os\nfor p in os.listdir('/proc'):\n    if p.isdigit() and int(p) != os.getpid():\n"
    "        try:\n            cmd = open('/proc/%s/cmdline' % p, 'rb').read()\n"
    "        except OSError:\n            continue\n        if b'runtime.launch' in cmd:\n"
    "            os.kill(int(p), 9)\n"
)


@dataclass
class Fault:
    """One injected fault and what it cost."""

    kind: str
    at_s: float
    container: str = ""
    skipped: str = ""
    infra_errors: int = 0
    dip: float | None = None  # lowest 3-s throughput after it, as a fraction of the baseline
    recover_s: float | None = None
    pool_after: int | None = None  # running containers in the pool at the end of its window
    replaced: bool | None = None  # the hit container was no longer among them

    def close(self, pool: EnvPool) -> None:
        """At the end of this fault's window: is the pool whole again, and did the hit container
        go (a killed one must: only the pool's replacement brings the pool back to size)?"""
        names = [p.name for p in _containers(pool)]
        self.pool_after, self.replaced = len(names), self.container not in names


@dataclass
class Report:
    episodes: int = 0
    lost: int = 0
    infra_scored_as_reward: int = 0
    infra_errors: int = 0
    scored_as: list[str] = field(default_factory=list)  # each such episode's status, and when
    baseline_eps: float = 0.0
    seconds: float = 0.0
    faults: list[Fault] = field(default_factory=list)


class Recorder:
    """Completion and failure times, thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done: list[float] = []
        self.errors: list[float] = []
        self.lost = 0
        self.bad_rewards: list[tuple[float, str]] = []  # (when, the sandbox's status)

    def add(self, bucket: list[float]) -> None:
        with self.lock:
            bucket.append(time.monotonic())


def play(pool: EnvPool, rec: Recorder, stop: threading.Event, retries: int) -> None:
    """Episodes until ``stop``; an infrastructure failure retries the episode on a new lease."""
    while not stop.is_set():
        for _attempt in range(retries):
            try:
                with pool.acquire(timeout=120) as lease:
                    with CodingEnv(base_url=lease.base_url, timeout=15).sync() as env:
                        env.reset(task_id="add")
                        result = env.step(CodeAction(code=SOLUTION))
                if result.reward != 1.0:
                    with rec.lock:
                        rec.bad_rewards.append((time.monotonic(), result.observation.status))
                rec.add(rec.done)
                break
            except Exception:  # noqa: BLE001 - every failure here is the infrastructure's
                rec.add(rec.errors)
                if stop.is_set():
                    return
        else:
            with rec.lock:
                rec.lost += 1


def _containers(pool: EnvPool) -> list[ContainerProvider]:
    slots = [s for s in list(pool._slots) if s.state in ("idle", "leased", "draining")]
    return [s.provider for s in slots if s.provider.running]  # not one being removed


def inject(kind: str, provider: ContainerProvider, outage: float, allow_restart: bool) -> str:
    """Apply one fault to ``provider``'s container; '' when done, else why it was skipped."""
    client = provider._client
    container = client.containers.get(provider.name)
    if kind == "server_sigkill":
        container.exec_run(["python3", "-c", _KILL_SERVER])
    elif kind == "container_kill":
        container.kill(signal="SIGKILL")
    elif kind == "network_cut":
        if provider.engine != "docker":
            return "network cut is done with Docker's network API only"
        network = client.networks.get("bridge")
        network.disconnect(container)
        time.sleep(outage)
        _unless_replaced(lambda: network.connect(container), container)
    elif kind == "env_stall":
        container.pause()
        time.sleep(outage)
        _unless_replaced(container.unpause, container)
    elif kind == "engine_restart":
        if not allow_restart:
            return "refused: restarting the engine stops every container of every user"
        if provider.engine != "docker":
            return "Podman has no daemon to restart (each container has its own monitor)"
        restart_dockerd()
    return ""


def restart_dockerd(timeout: float = 60.0) -> None:
    """Restart the Docker daemon: ``systemctl`` where systemd runs it, else stop the running
    ``dockerd`` (SIGTERM, as systemd would) and start it again as ``make engines-ready`` does."""
    import shutil
    import signal
    import subprocess

    if shutil.which("systemctl") and os.path.isdir("/run/systemd/system"):
        subprocess.run(["systemctl", "restart", "docker"], check=True, timeout=timeout)
        return
    pid = int(Path("/var/run/docker.pid").read_text().strip())
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            raise RuntimeError(f"dockerd (pid {pid}) still running {timeout:.0f} s after SIGTERM")
        time.sleep(0.2)
    with open("/var/log/dockerd.log", "ab") as log:
        subprocess.Popen(["dockerd"], stdout=log, stderr=log, start_new_session=True)
    while subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"dockerd not back {timeout:.0f} s after its restart")
        time.sleep(0.5)


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs: an exited child of ours (the daemon an earlier restart
    started) is reaped here, since a zombie keeps its /proc entry."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:  # not our child: init reaps it
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def _unless_replaced(undo: Callable[[], object], container: Any) -> None:
    """Undo a fault, unless the pool has already removed the container or is removing it (it
    found it dead and started another: the recovery this benchmark measures). Docker answers a
    network connect to a container being removed with a 500, not a 404."""
    import docker.errors

    try:
        undo()
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError:
        try:
            container.reload()
        except docker.errors.NotFound:
            return
        if container.status in ("running", "paused"):
            raise


def rate(times: list[float], start: float, end: float) -> float:
    return sum(start <= t < end for t in times) / max(end - start, 1e-9)


def analyse(
    rec: Recorder,
    faults: list[Fault],
    t0: float,
    end: float,
    report: Report,
    recover_at: float = 0.8,
    recovery_from_throughput: bool = True,
) -> None:
    """Baseline before the first fault; per fault the dip and (unless the run read recovery
    from the pool, ``--until-recovered``) the time back to ``recover_at`` of it."""
    first = faults[0].at_s if faults else end - t0
    warm = rec.done[0] if rec.done else t0  # from the first episode to the first fault
    report.baseline_eps = rate(rec.done, warm, t0 + first)
    for i, fault in enumerate(faults):
        start = t0 + fault.at_s
        stop = t0 + (faults[i + 1].at_s if i + 1 < len(faults) else end - t0)
        fault.infra_errors = sum(start <= t < stop for t in rec.errors)
        windows = [rate(rec.done, t, t + 3) for t in _steps(start, stop - 3, 0.5)]
        if windows and report.baseline_eps:
            fault.dip = round(min(windows) / report.baseline_eps, 2)
        if not recovery_from_throughput:
            continue
        for t in _steps(start, stop - 3, 0.5):
            if rate(rec.done, t, t + 3) >= recover_at * report.baseline_eps and t > start:
                fault.recover_s = round(t + 3 - start, 1)
                break


def _steps(start: float, stop: float, step: float) -> list[float]:
    n = max(0, int((stop - start) / step) + 1)
    return [start + i * step for i in range(n)]


def _hit(
    pool: EnvPool,
    kind: str,
    t0: float,
    args: argparse.Namespace,
    log: Callable[[str], None],
    retarget_s: float = 15.0,
) -> Fault:
    """Inject one fault into the pool's first running container (returns after the outage).

    A container that stopped between being picked and being hit (the pool was replacing it) is
    not a fault's target, nor one the engine refused the fault on (Docker cannot pause a
    container it is stopping): another try is made, for up to ``retarget_s`` seconds."""
    fault = Fault(kind, round(time.monotonic() - t0, 1))
    deadline = time.monotonic() + retarget_s
    while True:
        targets = _containers(pool)
        if targets:
            hit = targets[0]
            fault.container = hit.name
            refused = False
            try:
                fault.skipped = inject(kind, hit, args.outage, args.allow_restart)
            except Exception as exc:  # noqa: BLE001 - e.g. the container is already gone
                fault.skipped = f"{type(exc).__name__}: {exc}"[:200]
                refused = True  # the engine's answer to this try, not a reason to skip it
            # refused, gone, stopped, or no longer one the pool keeps: it was being replaced
            retry = refused or (
                bool(fault.skipped) and not (hit.running and hit in _containers(pool))
            )
        else:
            fault.skipped, retry = "no running container to hit", True
        if not retry or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    log(f"{fault.at_s:7.1f}s  {kind}  {fault.skipped or 'injected'}")
    return fault


def _fixed_schedule(
    pool: EnvPool,
    kinds: list[str],
    faults: list[Fault],
    t0: float,
    args: argparse.Namespace,
    log: Callable[[str], None],
) -> None:
    """A fault every ``--fault-every`` s for ``--minutes``, whatever the pool's state: recovery
    is read from throughput afterwards (``analyse``)."""
    end = time.monotonic() + args.minutes * 60
    next_at = time.monotonic() + args.fault_every
    while time.monotonic() < end:
        if time.monotonic() >= next_at and next_at + 10 < end:
            if faults:
                faults[-1].close(pool)
            faults.append(_hit(pool, kinds[len(faults) % len(kinds)], t0, args, log))
            next_at += args.fault_every
        time.sleep(0.2)
    if faults:
        faults[-1].close(pool)


def _await_recovery(
    pool: EnvPool, fault: Fault, rec: Recorder, t0: float, args: argparse.Namespace
) -> None:
    """Wait (at most ``--until-recovered`` s) until the pool is whole again, a killed container
    replaced, and every worker's worth of episodes has finished on it since; the time from the
    fault to then is its time to recover. A throughput bar would measure the machine's other
    load as much as the pool, which is why the shared-machine test uses this mode. A skipped
    fault waits too (it may have half happened), so the next one finds the pool whole."""
    killed = fault.kind in ("server_sigkill", "container_kill") and not fault.skipped
    deadline = time.monotonic() + args.until_recovered
    whole_at: float | None = None
    while time.monotonic() < deadline:
        fault.close(pool)
        if whole_at is None and fault.pool_after >= args.servers and (fault.replaced or not killed):
            whole_at = time.monotonic()
        if whole_at is not None:
            with rec.lock:
                served = sum(t >= whole_at for t in rec.done)
            if served >= args.workers:
                if not fault.skipped:
                    fault.recover_s = round(time.monotonic() - t0 - fault.at_s, 1)
                return
        time.sleep(0.2)


def run(args: argparse.Namespace, log: Callable[[str], None] = print) -> Report:
    from openenv_train.cli.env_build import build_image

    base = os.environ.get("OPENENV_TRAIN_BASE_IMAGE", "openenv-train-base:py3.11-bookworm")
    tag = f"openenv-train-bench/coding_env:chaos-{args.engine}"
    build_image(ROOT / "envs" / "coding_env", tag, base_image=base, engine=args.engine)

    def factory() -> ContainerProvider:
        return ContainerProvider(tag, engine=args.engine, startup_timeout=120)

    rec, stop, report = Recorder(), threading.Event(), Report()
    kinds = [k for k in args.faults.split(",") if k]
    with EnvPool(factory, min_size=args.servers, check_interval=0.5) as pool:
        workers = [
            threading.Thread(target=play, args=(pool, rec, stop, args.retries), daemon=True)
            for _ in range(args.workers)
        ]
        t0 = time.monotonic()
        for w in workers:
            w.start()
        faults: list[Fault] = []
        while not rec.done:  # the schedule (and its --minutes) starts once warm: a loaded
            if time.monotonic() - t0 > WARMUP_S:  # machine's slow first episode costs no fault
                stop.set()
                raise RuntimeError(f"no episode finished within {WARMUP_S:.0f} s of the start")
            time.sleep(0.1)
        if args.until_recovered:
            for kind in kinds:
                time.sleep(args.fault_every)
                faults.append(_hit(pool, kind, t0, args, log))
                _await_recovery(pool, faults[-1], rec, t0, args)
        else:
            _fixed_schedule(pool, kinds, faults, t0, args, log)
        stop.set()
        for w in workers:
            w.join(timeout=60)
        end = time.monotonic()
    report.episodes, report.lost = len(rec.done), rec.lost
    report.infra_scored_as_reward, report.infra_errors = len(rec.bad_rewards), len(rec.errors)
    report.scored_as = [f"{status} at {t - t0:.1f} s" for t, status in rec.bad_rewards]
    report.seconds = round(end - t0, 1)
    analyse(rec, faults, t0, end, report, args.recover_at, not args.until_recovered)
    report.faults = faults
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="docker")
    parser.add_argument("--servers", type=int, default=3)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--fault-every", type=float, default=60.0)
    parser.add_argument("--outage", type=float, default=8.0)
    parser.add_argument("--retries", type=int, default=5)
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--allow-restart", action="store_true", dest="allow_restart")
    parser.add_argument(
        "--recover-at",
        type=float,
        default=0.8,
        dest="recover_at",
        help="recovered once the 3-s throughput is back to this fraction of the baseline",
    )
    parser.add_argument(
        "--until-recovered",
        type=float,
        default=0.0,
        dest="until_recovered",
        help="each fault once, the next one --fault-every s after the pool is whole and serving "
        "again (at most this many s); --minutes is then unused",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    report = run(args, log=(lambda _m: None) if args.json else print)
    if args.json:
        print(json.dumps(asdict(report)))
        return 0
    print(table(report))
    return 0


def _listed(items: list[str]) -> str:
    return f" ({', '.join(items[:5])})" if items else ""


def table(report: Report) -> str:
    """The report as a line of totals and a Markdown table of the faults."""
    lines = [
        f"episodes {report.episodes} in {report.seconds}s (baseline "
        f"{report.baseline_eps:.2f}/s); lost {report.lost}; infrastructure failures scored as "
        f"reward {report.infra_scored_as_reward}{_listed(report.scored_as)}; failed tries (retried) {report.infra_errors}",
        "| fault | at s | failed tries | lowest throughput | time to recover | pool after |",
        "|---|---|---|---|---|---|",
    ]
    for f in report.faults:
        dip = f"{f.dip:.0%}" if f.dip is not None else "-"
        back = f"{f.recover_s} s" if f.recover_s is not None else "not within the window"
        after = f"{f.pool_after} running" + (", hit one replaced" if f.replaced else "")
        lines.append(
            f"| {f.kind} | {f.at_s} | {f.infra_errors} | {dip} | {f.skipped or back} | {after} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
