"""The child side of the sandbox: run as ``python -I -S runner.py`` with a JSON job on stdin.

Order matters: limits first, then (as root) the drop to this run's own uid, then the process is
made non-dumpable (no other process of its uid can read its memory or open its /proc files),
then the system-call filter built by the server is installed (``coding_env.seccomp``), and only
then is the submission loaded. The runner does not grade: for each test it evaluates the call
and writes the ``repr`` of the value (built-in types only) to the results pipe; the server
compares. Standard library only (``-I`` keeps this file's folder off ``sys.path``).
"""

import ctypes
import json
import os
import resource
import sys

PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 4, 38, 22, 2
PLAIN = (bool, int, float, complex, str, bytes, type(None))
CONTAINERS = (list, tuple, set, frozenset, dict)


def _limits(job):
    mb = job["memory_mb"] * 1024 * 1024
    cpu = job["cpu_seconds"]
    for name, value in (
        ("RLIMIT_CPU", (cpu, cpu + 1)),
        ("RLIMIT_AS", (mb, mb)),
        ("RLIMIT_FSIZE", (0, 0)),
        ("RLIMIT_NOFILE", (32, 32)),
        ("RLIMIT_CORE", (0, 0)),
    ):
        resource.setrlimit(getattr(resource, name), value)


#: Imported before the uid drop: the interpreter's own files may be unreadable to the run's uid
#: (e.g. a Python installed under /root), and tasks may use any of these.
PRELOAD = (
    "array bisect collections copy dataclasses decimal enum fractions functools heapq itertools "
    "json math operator random re signal socket statistics string subprocess threading time "
    "typing unicodedata"
).split()


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte)]
    _fields_.append(("k", ctypes.c_uint32))


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _isolate(job):
    """Drop to the run's uid (root only), then no dumping, no new privileges, the filter."""
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    libc = ctypes.CDLL(None, use_errno=True)
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(job["uid"])
        os.setuid(job["uid"])
    code = bytes.fromhex(job["filter"])
    count = len(code) // 8
    records = (_SockFilter * count).from_buffer_copy(code)
    prog = _SockFprog(count, records)
    for option, args in (
        (PR_SET_DUMPABLE, (0, 0, 0, 0)),
        (PR_SET_NO_NEW_PRIVS, (1, 0, 0, 0)),
        (PR_SET_SECCOMP, (SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0)),
    ):
        if libc.prctl(option, *(ctypes.c_ulong(a) for a in args)) != 0:
            raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def _plain(value, depth=0):
    """True for built-in values whose ``repr`` reads back with ``ast.literal_eval``."""
    if depth > 50:
        return False
    kind = type(value)
    if kind in PLAIN:
        return True
    if kind is dict:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    return kind in CONTAINERS and all(_plain(v, depth + 1) for v in value)


def main():
    job = json.loads(sys.stdin.read())
    sys.stdin.close()
    out = os.fdopen(job["result_fd"], "w", buffering=1)
    _limits(job)
    try:
        _isolate(job)
    except BaseException as exc:  # noqa: BLE001 - the server refuses the run: no sandbox, no code
        out.write(json.dumps({"event": "sandbox_error", "error": repr(exc)[:500]}) + "\n")
        return
    out.write(json.dumps({"event": "start"}) + "\n")
    namespace = {"__name__": "submission"}
    try:
        exec(compile(job["source"], "<submission>", "exec"), namespace)
    except BaseException as exc:  # noqa: BLE001 - SystemExit too: the submission failed to load
        error = f"{type(exc).__name__}: {exc}"[:500]
        out.write(json.dumps({"event": "load_error", "error": error}) + "\n")
        return
    for index, call in enumerate(job["calls"]):
        line = {"event": "value", "index": index}
        try:
            value = eval(call, namespace)
            text = repr(value) if _plain(value) else None
            if text is None:
                line["error"] = f"returned a {type(value).__name__}, not a plain built-in value"
            elif len(text) > job["max_value_chars"]:
                line["error"] = f"the value's repr is over {job['max_value_chars']} characters"
            else:
                line["repr"] = text
        except BaseException as exc:  # noqa: BLE001
            line["error"] = f"{type(exc).__name__}: {exc}"[:300]
        out.write(json.dumps(line) + "\n")
    out.write(json.dumps({"event": "done"}) + "\n")


if __name__ == "__main__":
    main()
