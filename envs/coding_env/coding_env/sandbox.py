"""Run untrusted Python against a task's tests in one bounded child process; grade on this side.

Every run, in every mode (root, non-root, inside the env's container):

- one process, no more: the system-call filter (``coding_env.seccomp``) refuses fork, exec,
  sockets of every family, signals to other processes, ptrace, every filesystem write and memory
  that outlives the process (System V / POSIX shared memory); killing the process therefore
  leaves nothing behind, and nothing is written anywhere to clean up;
- CPU seconds (``RLIMIT_CPU``), an address-space cap (``RLIMIT_AS``), a wall-clock deadline, an
  empty environment (no tokens), 32 open files, no core dumps, ``MAX_THREADS`` threads
  (``RLIMIT_NPROC``, sized by ``thread_limit``: far below a container's pids limit);
- a filesystem view of its own where the kernel has Landlock (``coding_env.landlock``): it reads
  the standard library and system libraries only, and writes only its scratch folder, a fresh
  folder per run under ``scratch_root()`` (its ``TMPDIR`` and working directory), bounded in
  bytes and files (``scratch_bytes``, ``scratch_files``: a run over either fails with
  ``scratch_limit``) and removed when the run ends; without Landlock it writes nothing;
- its output and its results come back on pipes this process owns, read with a bound (more
  output than ``output_bytes`` kills the run); no file is shared with the submission;
- it is made non-dumpable, so no other process of its uid can read its memory or its /proc files;
  the server is too;
- as root it also runs under a uid of its own (not shared with any concurrent run of this
  server), so it cannot read the server's private files; the uids come from a block no account,
  subordinate-id range or running process uses (``uid_range``, checked once per process).

Grading happens here (``coding_env.grading``): the runner only reports values for the tests'
calls. Reward hacking by returning the right values is the task solved; nothing a submission
prints or writes can raise the reward above the fraction of tests it returned right values for.
"""

from __future__ import annotations

import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from . import landlock
from .deadline import TICK_S, RunDeadline
from .grading import MAX_VALUE_CHARS, Check, grade, parse_test
from .seccomp import build_filter

RUNNER = Path(__file__).with_name("runner.py")
#: how many uids root mode draws from: a block no host account, subordinate-id range
#: (``/etc/subuid``: LXD, Podman, Docker's userns-remap) or running process uses (``uid_range``)
UID_BLOCK = 1_000_000
#: where the search for that block starts (above the usual subordinate ranges), and ends
_UID_SEARCH = (1_500_000_000, 4_000_000_000)
#: threads a run may start besides its own (``RLIMIT_NPROC``): far below a container's pids
#: limit, so a thread bomb cannot take the server's threads away
MAX_THREADS = 16
_UIDS_IN_USE: set[int] = set()
_UIDS_LOCK = threading.Lock()
#: how often a running submission's scratch folder is measured against its bounds
SCRATCH_CHECK_S = 0.02


class SandboxUnavailable(RuntimeError):
    """The sandbox could not be set up (an infrastructure failure, never a reward of 0)."""


@dataclass(frozen=True)
class Limits:
    """Per-run bounds; ``from_env`` reads ``CODING_CPU_SECONDS`` etc. (see the env README)."""

    cpu_seconds: int = 2
    memory_mb: int = 256
    output_bytes: int = 65_536
    wall_seconds: float = 5.0
    #: frozen time (a paused container, an unscheduled server) not counted against
    #: ``wall_seconds``, at most this much per run (``RunDeadline``)
    frozen_seconds: float = 30.0
    source_bytes: int = 65_536
    scratch_bytes: int = 8 * 2**20
    scratch_files: int = 64

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
            frozen_seconds=float(num("CODING_FROZEN_SECONDS", 30.0, float)),
            scratch_bytes=int(num("CODING_SCRATCH_MB", 8, int)) * 2**20,
            scratch_files=int(num("CODING_SCRATCH_FILES", 64, int)),
        )


@dataclass
class RunResult:
    """What happened. ``status``: ok, load_error (the source raised, e.g. MemoryError), timeout
    (wall clock), cpu_limit (killed for CPU time), output_limit (printed too much),
    scratch_limit (wrote more than its scratch bounds), crashed (exited or was killed early),
    protocol_error (wrote something else on its result pipe). ``filesystem``: ``landlock`` (its
    own view and scratch), ``landlock-read-only`` (no scratch: the kernel's Landlock is older
    than ABI 3) or ``unrestricted-reads`` (no Landlock: no writes, reads what the server's uid
    reads)."""

    passed: int
    total: int
    status: str
    network: str = "seccomp"
    errors: list[str] = field(default_factory=list)
    output: str = ""
    seconds: float = 0.0
    filesystem: str = "landlock"

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0


def memory_limit_bytes() -> int | None:
    """This process's cgroup memory limit (v2 or v1), or None where there is none."""
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            raw = Path(path).read_text().strip()
        except OSError:
            continue
        if raw.isdigit() and int(raw) < 2**60:  # v1 writes a huge number for "no limit"
            return int(raw)
    return None


def default_parallel(
    memory_mb: int, cpus: int | None = None, memory_limit: int | None = None
) -> int:
    """How many runs at once by default: one per CPU this process may use, and no more than half
    of the container's memory limit holds at ``memory_mb`` each (the server keeps the rest)."""
    cpus = cpus if cpus is not None else len(os.sched_getaffinity(0))
    memory_limit = memory_limit if memory_limit is not None else memory_limit_bytes()
    runs = cpus
    if memory_limit:
        runs = min(runs, memory_limit // 2 // (memory_mb * 2**20))
    return max(1, runs)


def _make_undumpable() -> None:
    """Keep a same-uid child out of this process's /proc files (environ, mem, fd). Linux only."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    except (OSError, AttributeError):
        pass


def taken_ids(proc: str = "/proc", etc: str = "/etc") -> list[tuple[int, int]]:
    """Every uid/gid in use on this machine as ``(first, count)``: accounts and groups, the
    subordinate ranges, and the ids of every running process."""
    taken: list[tuple[int, int]] = []
    for name in ("passwd", "group"):
        try:
            lines = Path(etc, name).read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            fields = line.split(":")
            if len(fields) > 2 and fields[2].isdigit():
                taken.append((int(fields[2]), 1))
    for name in ("subuid", "subgid"):
        try:
            lines = Path(etc, name).read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            fields = line.strip().split(":")
            if len(fields) == 3 and fields[1].isdigit() and fields[2].isdigit():
                taken.append((int(fields[1]), int(fields[2])))
    for entry in os.listdir(proc):
        if entry.isdigit():
            try:
                status = Path(proc, entry, "status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith(("Uid:", "Gid:")):
                    taken += [(int(v), 1) for v in line.split()[1:]]
    return taken


def pick_uid_range(taken: list[tuple[int, int]], size: int = UID_BLOCK) -> tuple[int, int]:
    """The first block of ``size`` ids from ``_UID_SEARCH`` that overlaps nothing in
    ``taken``, as ``(low, high)`` inclusive."""
    low, end = _UID_SEARCH
    while low + size <= end:
        clash = [f + n for f, n in taken if f < low + size and f + n > low]
        if not clash:
            return low, low + size - 1
        low = max(clash)
    raise SandboxUnavailable(
        f"no block of {size} free uids between {_UID_SEARCH[0]} and {_UID_SEARCH[1]} "
        "for the coding sandbox's runs"
    )


@cache
def uid_range() -> tuple[int, int]:
    """The uids root mode draws from, checked once per process against ``taken_ids``."""
    return pick_uid_range(taken_ids())


def _claim_uid() -> int:
    low, high = uid_range()
    with _UIDS_LOCK:
        while True:
            uid = random.randint(low, high)
            if uid not in _UIDS_IN_USE:
                _UIDS_IN_USE.add(uid)
                return uid


def _release_uid(uid: int) -> None:
    with _UIDS_LOCK:
        _UIDS_IN_USE.discard(uid)


def uid_tasks(uid: int, proc: str = "/proc") -> int:
    """Tasks (threads) running under ``uid`` now: the count ``RLIMIT_NPROC`` is checked against.
    ``/proc/<pid>/status`` (readable for every process, a non-dumpable one too)."""
    count = 0
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/status", "rb") as f:
                data = f.read()
        except OSError:
            continue
        at = data.find(b"\nUid:")
        if at < 0 or int(data[at + 5 :].split(None, 1)[0]) != uid:
            continue
        at = data.find(b"\nThreads:")
        if at >= 0:
            count += int(data[at + 9 :].split(None, 1)[0])
    return count


def thread_limit(root: bool, uid: int) -> int:
    """The run's ``RLIMIT_NPROC``: the kernel counts every task of the run's real uid, so a run
    of its own uid (root mode) gets itself plus ``MAX_THREADS``; a run sharing the server's uid
    gets what that uid runs now plus ``MAX_THREADS`` (the server's own threads never count
    against a run's limit, only the other way round)."""
    return 1 + MAX_THREADS + (0 if root else uid_tasks(uid))


@dataclass
class _Streams:
    """What came back on the two pipes, and why reading stopped."""

    results: bytes = b""
    output: bytes = b""
    stopped: str = ""  # "", "timeout", "output_limit", "result_limit", "scratch_limit"


@cache
def landlock_abi() -> int:
    """This kernel's Landlock ABI (0: none), probed once per process."""
    return landlock.abi()


def filesystem_mode() -> str:
    """How runs see the filesystem here (``RunResult.filesystem``)."""
    version = landlock_abi()
    if version >= landlock.SCRATCH_ABI:
        return "landlock"
    return "landlock-read-only" if version else "unrestricted-reads"


def scratch_root() -> str:
    """Where runs' scratch folders are made: ``CODING_SCRATCH_DIR``, else ``/dev/shm`` (memory:
    a folder made and removed there costs microseconds, on a disk milliseconds), else the
    server's temp folder. In root mode it must be traversable by other uids, as these are."""
    chosen = os.environ.get("CODING_SCRATCH_DIR", "").strip()
    if chosen:
        return chosen
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK):
        return "/dev/shm"
    return tempfile.gettempdir()


@dataclass
class _Scratch:
    """One run's writable folder: made by the server, bounded while the run runs, then removed."""

    path: str
    max_bytes: int
    max_files: int

    @classmethod
    def make(cls, uid: int | None, limits: Limits) -> _Scratch:
        path = tempfile.mkdtemp(prefix="coding-scratch-", dir=scratch_root())  # mode 0700
        if uid is not None:
            os.chown(path, uid, uid)
        return cls(path, limits.scratch_bytes, limits.scratch_files)

    def over(self) -> bool:
        """True once the run holds more bytes or files here than its bounds (only regular files
        can exist: the Landlock rules grant nothing else)."""
        used = files = 0
        with os.scandir(self.path) as entries:
            for entry in entries:
                files += 1
                try:
                    used += entry.stat(follow_symlinks=False).st_blocks * 512
                except OSError:
                    continue  # removed meanwhile
                if files > self.max_files or used > self.max_bytes:
                    return True
        return False

    def remove(self) -> None:
        try:
            os.rmdir(self.path)  # the usual case: the run wrote nothing (cheaper than rmtree)
        except OSError:
            shutil.rmtree(self.path, ignore_errors=True)  # the run is dead: nothing writes now


def run_tests(
    source: str, tests: list[str] | tuple[str, ...], limits: Limits | None = None
) -> RunResult:
    """Run ``source`` then each test's call in a sandboxed child; grade here; never raises for
    bad code (``SandboxUnavailable`` when the sandbox itself cannot be set up)."""
    limits = limits or Limits()
    checks = [parse_test(t) for t in tests]
    if len(source.encode()) > limits.source_bytes:
        return RunResult(
            0, len(tests), "load_error", errors=[f"source is over {limits.source_bytes} bytes"]
        )
    root = os.geteuid() == 0
    if not root:
        _make_undumpable()
    uid = _claim_uid() if root else os.getuid()
    version = landlock_abi()
    started = time.monotonic()
    scratch = None
    try:
        if version >= landlock.SCRATCH_ABI:
            scratch = _Scratch.make(uid if root else None, limits)
        rules = landlock.ruleset(version, scratch and scratch.path) if version else None
        threads = thread_limit(root, uid)
        proc, streams = _run(source, checks, limits, uid, threads, scratch, rules)
    finally:
        if scratch is not None:
            scratch.remove()
        if root:
            _release_uid(uid)
    secs = time.monotonic() - started
    return _summarise(streams, checks, proc.returncode, limits, secs, filesystem_mode())


def _run(
    source: str,
    checks: list[Check],
    limits: Limits,
    uid: int,
    threads: int,
    scratch: _Scratch | None,
    rules: landlock.Ruleset | None,
) -> tuple[subprocess.Popen[bytes], _Streams]:
    result_r, result_w = os.pipe()
    out_r, out_w = os.pipe()
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    if scratch is not None:
        env.update(TMPDIR=scratch.path, HOME=scratch.path)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-B", str(RUNNER)],
            stdin=subprocess.PIPE,
            stdout=out_w,
            stderr=out_w,
            cwd="/",
            env=env,
            pass_fds=(result_w,),
            start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(result_w)
        os.close(out_w)
    job = {
        "source": source,
        "calls": [c.call for c in checks],
        "cpu_seconds": limits.cpu_seconds,
        "memory_mb": limits.memory_mb,
        "uid": uid,
        "threads": threads,
        "result_fd": result_w,
        "filter": build_filter(proc.pid, scratch=scratch is not None).hex(),
        "max_value_chars": MAX_VALUE_CHARS,
        "scratch": scratch and scratch.path,
        "scratch_bytes": limits.scratch_bytes if scratch is not None else 0,
        "landlock": rules and rules.as_job(),
    }
    try:
        streams = _collect(
            proc, result_r, out_r, json.dumps(job).encode(), limits, len(checks), scratch
        )
    finally:
        try:
            proc.kill()  # the one process there is: the filter refuses it any other
        except ProcessLookupError:
            pass
        proc.wait()
        os.close(result_r)
        os.close(out_r)
    return proc, streams


def _collect(
    proc: subprocess.Popen[bytes],
    result_r: int,
    out_r: int,
    job: bytes,
    limits: Limits,
    n_tests: int,
    scratch: _Scratch | None,
) -> _Streams:
    """Feed the job, read both pipes until EOF, a bound, or the wall-clock deadline; the scratch
    folder is checked against its bounds all along (``SCRATCH_CHECK_S``) and at the end."""
    deadline = RunDeadline(limits.wall_seconds, limits.frozen_seconds)
    result_limit = 4096 + n_tests * (MAX_VALUE_CHARS + 400)
    streams = _Streams()
    try:
        assert proc.stdin is not None
        proc.stdin.write(job)
        proc.stdin.close()
    except OSError:  # it died before reading its job; the summary says how
        pass
    _read_until(
        proc, result_r, out_r, streams, deadline, limits.output_bytes, result_limit, scratch
    )
    if scratch is not None and not streams.stopped and scratch.over():
        streams.stopped = "scratch_limit"
    if streams.stopped and streams.stopped != "result_limit":
        _drain(result_r, streams, result_limit)  # lines already written (e.g. "start") count
    return streams


def _read_until(
    proc: subprocess.Popen[bytes],
    result_r: int,
    out_r: int,
    streams: _Streams,
    deadline: RunDeadline,
    output_limit: int,
    result_limit: int,
    scratch: _Scratch | None,
) -> None:
    poller = select.poll()  # not select(): a busy server's descriptors pass 1024
    for fd in (result_r, out_r):
        poller.register(fd, select.POLLIN)
    open_fds = 2
    next_check = time.monotonic() + SCRATCH_CHECK_S
    while open_fds:
        wait = deadline.next_wait(SCRATCH_CHECK_S if scratch is not None else TICK_S)
        if wait <= 0:
            streams.stopped = "timeout"
            return
        now = time.monotonic()
        if scratch is not None and now >= next_check:
            if scratch.over():
                streams.stopped = "scratch_limit"
                return
            next_check = now + SCRATCH_CHECK_S
        for fd, _ in poller.poll(wait * 1000):
            chunk = os.read(fd, 65536)
            if not chunk:
                poller.unregister(fd)
                open_fds -= 1
            elif fd == result_r:
                streams.results += chunk
                if len(streams.results) > result_limit:
                    streams.stopped = "result_limit"
                    return
            else:
                streams.output += chunk
                if len(streams.output) > output_limit:
                    streams.stopped = "output_limit"
                    return
    try:
        proc.wait(timeout=deadline.left())
    except subprocess.TimeoutExpired:
        streams.stopped = "timeout"


def _drain(fd: int, streams: _Streams, limit: int) -> None:
    """Read what is already in the pipe, without waiting, up to ``limit`` bytes in all."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while len(streams.results) <= limit and poller.poll(0):
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        streams.results += chunk


def _summarise(
    streams: _Streams,
    checks: list[Check],
    rc: int | None,
    limits: Limits,
    secs: float,
    filesystem: str,
) -> RunResult:
    output = streams.output[: limits.output_bytes][-2000:].decode("utf-8", "replace")
    lines = streams.results.splitlines()
    if streams.stopped == "result_limit":
        lines.append(b"(more than the result bound)")
    verdict = grade(lines, checks)
    total = len(checks)
    if verdict.sandbox_error is not None:
        raise SandboxUnavailable(f"the coding sandbox could not start: {verdict.sandbox_error}")
    if not verdict.started and verdict.protocol_error is None:  # the submission never ran
        detail = output.strip()[-300:] or streams.stopped or f"exit status {rc}"
        raise SandboxUnavailable(f"the coding sandbox's runner stopped before the code: {detail}")
    errors = verdict.errors
    if verdict.protocol_error is not None:
        status = "protocol_error"
        errors = [f"the run wrote something else than results: {verdict.protocol_error}"]
    elif streams.stopped == "timeout":
        status = "timeout"
        errors.append("killed at the wall-clock limit")
    elif streams.stopped == "output_limit":  # a failure whatever it returned (no race)
        status, verdict.passed = "output_limit", 0
        errors = [f"printed more than {limits.output_bytes} bytes"]
    elif streams.stopped == "scratch_limit":  # a failure whatever it returned, like output
        status, verdict.passed = "scratch_limit", 0
        errors = [
            f"wrote more than {limits.scratch_bytes} bytes or {limits.scratch_files} files "
            "to its scratch folder"
        ]
    elif verdict.load_error is not None:
        status = "load_error"
        errors.insert(0, verdict.load_error)
    elif verdict.finished:
        status = "ok"
    else:
        status = "cpu_limit" if rc in (-signal.SIGXCPU, -signal.SIGKILL) else "crashed"
        how = f"signal {-rc}" if rc is not None and rc < 0 else f"exit status {rc}"
        ran = len(verdict.errors) + verdict.passed
        errors.append(f"the process ended before the tests finished ({how}; {ran}/{total} ran)")
    return RunResult(
        verdict.passed, total, status, "seccomp", errors[:20], output, round(secs, 3), filesystem
    )
