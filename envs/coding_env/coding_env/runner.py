"""The child side of the sandbox: run as ``python -I -S runner.py`` with a JSON job on stdin.

Order matters: limits first, then (as root) a private network namespace, then the privileges
are dropped to a throw-away uid (which makes ``RLIMIT_NPROC`` a real process cap and puts the
server's files and /proc entries out of reach), then the submission runs, then the tests. Each
test result is written to the results pipe as soon as it is known, so a submission that kills
its own process still gets the tests that ran before. Standard library only.
"""

import json
import os
import resource
import sys


def _limits(job):
    mb = job["memory_mb"] * 1024 * 1024
    cpu = job["cpu_seconds"]
    for name, value in (
        ("RLIMIT_CPU", (cpu, cpu + 1)),
        ("RLIMIT_AS", (mb, mb)),
        ("RLIMIT_FSIZE", (job["output_bytes"], job["output_bytes"])),
        ("RLIMIT_NOFILE", (32, 32)),
        ("RLIMIT_CORE", (0, 0)),
    ):
        resource.setrlimit(getattr(resource, name), value)


#: Imported before the uid drop: the interpreter's own files may be unreadable to the throw-away
#: uid (e.g. a Python installed under /root), and tasks may use any of these.
PRELOAD = (
    "array bisect collections copy dataclasses decimal enum fractions functools heapq itertools "
    "math operator random re socket statistics string typing unicodedata encodings.idna"
).split()


def _isolate(job):
    """Network namespace and uid drop when root; else sockets are disabled in-process."""
    network = "socket-disabled"
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    if os.geteuid() == 0:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(0x40000000) == 0:  # CLONE_NEWNET: only a down loopback inside
            network = "namespace"
        uid = job["uid"]
        resource.setrlimit(resource.RLIMIT_NPROC, (job["max_procs"], job["max_procs"]))
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    try:
        import ctypes

        ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
    except (OSError, AttributeError):
        pass
    if network != "namespace":
        import socket

        def _blocked(*args, **kwargs):
            raise OSError("network access is disabled in the coding sandbox")

        socket.socket = _blocked
        socket.create_connection = _blocked
        socket.socketpair = _blocked
    return network


def main():
    job = json.loads(sys.stdin.read())
    sys.stdin.close()
    out = os.fdopen(job["result_fd"], "w", buffering=1)
    _limits(job)
    network = _isolate(job)
    out.write(json.dumps({"event": "start", "network": network}) + "\n")
    namespace = {"__name__": "submission"}
    try:
        exec(compile(job["source"], "<submission>", "exec"), namespace)
    except BaseException as exc:  # noqa: BLE001 - SystemExit too: the submission failed to load
        out.write(
            json.dumps({"event": "load_error", "error": f"{type(exc).__name__}: {exc}"[:500]})
            + "\n"
        )
        return
    for index, test in enumerate(job["tests"]):
        try:
            ok = eval(test, namespace) is True
            error = None if ok else "returned a wrong value"
        except BaseException as exc:  # noqa: BLE001
            ok, error = False, f"{type(exc).__name__}: {exc}"[:300]
        out.write(
            json.dumps({"event": "test", "index": index, "passed": ok, "error": error}) + "\n"
        )
    out.write(json.dumps({"event": "done"}) + "\n")


if __name__ == "__main__":
    main()
