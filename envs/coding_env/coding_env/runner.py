"""The child side of the sandbox: run as ``python -I -S runner.py`` with a JSON job on stdin.

Order matters: limits first, then the Landlock ruleset decided by the server is built
(``coding_env.landlock``: what the run may read and write; built while the runner can still open
every folder it names), then (as root) the drop to this run's own uid, then the move into the
run's scratch folder, then the process is made non-dumpable (no other process of its uid can read
its memory or open its /proc files), then the ruleset and the system-call filter built by the
server (``coding_env.seccomp``) are enforced, and only then is the submission loaded.
The runner does not grade: for each test it evaluates the call
and writes the ``repr`` of the value (built-in types only) to the results pipe; the server
compares. Standard library only (``-I`` keeps this file's folder off ``sys.path``).
"""

import ctypes
import json
import os
import resource
import sys

PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 4, 38, 22, 2
LANDLOCK_CREATE_RULESET, LANDLOCK_ADD_RULE, LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_RULE_PATH_BENEATH = 1
O_PATH, O_CLOEXEC = 0o10000000, 0o2000000
PLAIN = (bool, int, float, complex, str, bytes, type(None))
CONTAINERS = (list, tuple, set, frozenset, dict)


def _limits(job):
    mb = job["memory_mb"] * 1024 * 1024
    cpu = job["cpu_seconds"]
    for name, value in (
        ("RLIMIT_CPU", (cpu, cpu + 1)),
        ("RLIMIT_AS", (mb, mb)),
        ("RLIMIT_FSIZE", (job["scratch_bytes"], job["scratch_bytes"])),
        ("RLIMIT_NOFILE", (32, 32)),
        ("RLIMIT_CORE", (0, 0)),
        ("RLIMIT_NPROC", (job["threads"], job["threads"])),
    ):
        resource.setrlimit(getattr(resource, name), value)


#: Imported before the uid drop: the interpreter's own files may be unreadable to the run's uid
#: (e.g. a Python installed under /root), and tasks may use any of these.
PRELOAD = (
    "array bisect collections copy dataclasses decimal enum fractions functools heapq itertools "
    "json math operator random re signal socket statistics string subprocess tempfile threading "
    "time typing unicodedata"
).split()


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte)]
    _fields_.append(("k", ctypes.c_uint32))


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _landlock_ruleset(libc, ruleset):
    """The server's Landlock rules as a ruleset fd (built before the uid drop: the run's uid may
    not be able to open the interpreter's folders by itself, e.g. a Python under /root)."""
    handled = ctypes.c_uint64(ruleset["handled"])
    fd = libc.syscall(LANDLOCK_CREATE_RULESET, ctypes.byref(handled), ctypes.c_size_t(8), 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    for path, access in ruleset["rules"]:
        parent = os.open(path, O_PATH | O_CLOEXEC)
        try:
            rule = _PathBeneath(access, parent)
            if libc.syscall(
                LANDLOCK_ADD_RULE, fd, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0
            ):
                raise OSError(ctypes.get_errno(), f"landlock_add_rule({path}) failed")
        finally:
            os.close(parent)
    return fd


def _landlock_restrict(libc, fd):
    """From now on only the granted paths can be opened, by this process and for good."""
    try:
        if libc.syscall(LANDLOCK_RESTRICT_SELF, fd, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(fd)


def _isolate(job):
    """Drop to the run's uid (root only), into the scratch folder, then no dumping, no new
    privileges, the Landlock rules, the filter."""
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    libc = ctypes.CDLL(None, use_errno=True)
    rules = _landlock_ruleset(libc, job["landlock"]) if job["landlock"] is not None else None
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(job["uid"])
        os.setuid(job["uid"])
    if job["scratch"]:
        os.chdir(job["scratch"])
    code = bytes.fromhex(job["filter"])
    count = len(code) // 8
    records = (_SockFilter * count).from_buffer_copy(code)
    prog = _SockFprog(count, records)

    def prctl(option, *args):
        if libc.prctl(option, *(ctypes.c_ulong(a) for a in (*args, 0, 0, 0, 0)[:4])) != 0:
            raise OSError(ctypes.get_errno(), f"prctl({option}) failed")

    prctl(PR_SET_DUMPABLE, 0)
    prctl(PR_SET_NO_NEW_PRIVS, 1)  # Landlock and the filter both need it
    if rules is not None:
        _landlock_restrict(libc, rules)
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog))


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
