"""Run untrusted Python against unit tests in a bounded child process; the server never dies of it.

Every run gets: CPU seconds (``RLIMIT_CPU``), an address-space cap (``RLIMIT_AS``), an output cap
(``RLIMIT_FSIZE`` on its stdout/stderr file: Python raises on the write past it), a wall-clock
deadline, an empty environment (no inherited variables, so no tokens), an empty working
directory it cannot write to, and its own process group and session. As root (CI, containers
started as root) it also gets a private network namespace (no network at all) and a throw-away
uid with ``RLIMIT_NPROC`` = 1 (no fork, no reading the server's private files or /proc entries,
no signalling the server); every process left with that uid is stopped and killed afterwards.
Not root: sockets are disabled inside the child (a best-effort block that ctypes could get
around), the process group is killed afterwards, and the server process is made non-dumpable so
a same-uid child cannot read ``/proc/<server>/environ``. Run it in the container runtime for
the container's isolation on top.

The tests run in the submission's own process, so a submission can tamper with its own tests
(reward hacking); the sandbox protects the server and the machine, not the score.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

RUNNER = Path(__file__).with_name("runner.py")
_UID_RANGE = (200_000, 2_000_000)


@dataclass(frozen=True)
class Limits:
    """Per-run bounds; ``from_env`` reads ``CODING_CPU_SECONDS`` etc. (see the env README)."""

    cpu_seconds: int = 2
    memory_mb: int = 256
    output_bytes: int = 65_536
    wall_seconds: float = 5.0
    source_bytes: int = 65_536

    @classmethod
    def from_env(cls) -> Limits:
        def num(name: str, default: float, kind: type) -> float:
            raw = os.environ.get(name, "").strip()
            try:
                value = kind(raw) if raw else default
            except ValueError:
                raise ValueError(f"{name} must be a number (e.g. {default}), got {raw!r}") from None
            if value <= 0:
                raise ValueError(f"{name} must be > 0, got {raw!r}")
            return value

        return cls(
            cpu_seconds=int(num("CODING_CPU_SECONDS", 2, int)),
            memory_mb=int(num("CODING_MEMORY_MB", 256, int)),
            output_bytes=int(num("CODING_OUTPUT_BYTES", 65_536, int)),
            wall_seconds=float(num("CODING_WALL_SECONDS", 5.0, float)),
        )


@dataclass
class RunResult:
    """What happened. ``status``: ok, load_error (the source raised, e.g. MemoryError), timeout
    (wall clock), cpu_limit (killed for CPU time), crashed (exited or was killed early)."""

    passed: int
    total: int
    status: str
    network: str = "unknown"
    errors: list[str] = field(default_factory=list)
    output: str = ""
    seconds: float = 0.0

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0


def _make_undumpable() -> None:
    """Keep a same-uid child out of this process's /proc files (environ, mem). Linux only."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    except (OSError, AttributeError):
        pass


def _pids_of_uid(uid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid == uid:
                pids.append(int(entry))
        except OSError:
            continue
    return pids


def _sweep_uid(uid: int, deadline_s: float = 2.0) -> None:
    """Stop (no more forks) and then kill every process running as the throw-away ``uid``."""
    end = time.monotonic() + deadline_s
    seen: set[int] = set()
    while time.monotonic() < end:
        pids = _pids_of_uid(uid)
        if not pids:
            return
        for pid in pids:
            sig = signal.SIGKILL if pid in seen else signal.SIGSTOP
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
            seen.add(pid)
        time.sleep(0.01)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_tests(
    source: str, tests: list[str] | tuple[str, ...], limits: Limits | None = None
) -> RunResult:
    """Run ``source`` then each test expression in a sandboxed child; never raises for bad code."""
    limits = limits or Limits()
    if len(source.encode()) > limits.source_bytes:
        return RunResult(
            0, len(tests), "load_error", errors=[f"source is over {limits.source_bytes} bytes"]
        )
    root = os.geteuid() == 0
    if not root:
        _make_undumpable()
    uid = random.randint(*_UID_RANGE) if root else os.getuid()
    job = {
        "source": source,
        "tests": list(tests),
        "cpu_seconds": limits.cpu_seconds,
        "memory_mb": limits.memory_mb,
        "output_bytes": limits.output_bytes,
        "uid": uid,
        "max_procs": 1,
    }
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="coding-env-") as tmp:
        os.chmod(tmp, 0o755)  # readable (cwd) but not writable by the throw-away uid
        out_path = Path(tmp) / "output"
        read_fd, write_fd = os.pipe()
        job["result_fd"] = write_fd
        with open(out_path, "wb") as out_file:
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-I", "-S", str(RUNNER)],
                    stdin=subprocess.PIPE,
                    stdout=out_file,
                    stderr=subprocess.STDOUT,
                    cwd=tmp,
                    env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                    pass_fds=(write_fd,),
                    start_new_session=True,
                    close_fds=True,
                )
            finally:
                os.close(write_fd)
        events = _collect(proc, read_fd, json.dumps(job).encode(), limits.wall_seconds)
        _kill_group(proc)
        if root:
            _sweep_uid(uid)
        proc.wait()
        output = out_path.read_bytes()[-2000:].decode("utf-8", "replace")
    return _summarise(events, len(tests), proc.returncode, output, time.monotonic() - started)


def _collect(proc: subprocess.Popen[bytes], read_fd: int, job: bytes, wall: float) -> list[dict]:
    """Feed the job, read result lines until EOF and exit, or the wall-clock deadline (then kill)."""
    deadline = time.monotonic() + wall
    buf = b""
    timed_out = False
    try:
        assert proc.stdin is not None
        proc.stdin.write(job)
        proc.stdin.close()
    except OSError:  # it died before reading its job; the summary says how
        pass
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            if len(buf) < 1_000_000:
                buf += chunk
        if not timed_out:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        os.close(read_fd)
    if timed_out:
        _kill_group(proc)
    events: list[dict] = []
    for line in buf.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    if timed_out:
        events.append({"event": "timeout"})
    return events


def _summarise(
    events: list[dict], total: int, rc: int | None, output: str, secs: float
) -> RunResult:
    network = next(
        (e.get("network", "unknown") for e in events if e.get("event") == "start"), "unknown"
    )
    tests = {e["index"]: e for e in events if e.get("event") == "test"}
    passed = sum(1 for e in tests.values() if e.get("passed"))
    errors = [f"test {i}: {e['error']}" for i, e in sorted(tests.items()) if e.get("error")]
    if any(e.get("event") == "timeout" for e in events):
        status = "timeout"
        errors.append("killed at the wall-clock limit")
    elif any(e.get("event") == "load_error" for e in events):
        status = "load_error"
        errors.insert(0, next(e["error"] for e in events if e.get("event") == "load_error"))
    elif any(e.get("event") == "done" for e in events):
        status = "ok"
    else:
        status = "cpu_limit" if rc in (-signal.SIGXCPU, -signal.SIGKILL) else "crashed"
        how = f"signal {-rc}" if rc is not None and rc < 0 else f"exit status {rc}"
        errors.append(
            f"the process ended before the tests finished ({how}; {len(tests)}/{total} ran)"
        )
    return RunResult(passed, total, status, network, errors[:20], output, round(secs, 3))
