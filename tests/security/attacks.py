"""Hostile submissions for the coding sandbox, one per finding of the security audit, and the
round that runs one of them next to an honest "victim" session and checks the invariants.

Standard library plus ``coding_env`` only: ``attack_driver.py`` imports this module in a process
that runs under another uid (the non-root mode) and prints the outcomes as JSON.
"""

from __future__ import annotations

import glob
import hashlib
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

MARKER = "coding-attack"
#: every descriptor the submission holds, wherever the server's pipes landed (a server with many
#: open files hands its pipes over at high numbers): the fd list, else the whole range
OPEN_FDS = (
    "def open_fds():\n    try:\n        return [int(n) for n in os.listdir('/proc/self/fd')]\n"
    "    except OSError:\n        return range(3, 65536)\n"
)
ADD = "\ndef add(a, b):\n    return a + b\n"
VICTIM_SECRET = "victim-secret-7f3a"
#: in a file only the server's uid may read (mode 0600), which no run may read
SERVER_SECRET = "server-secret-4b1e"
VICTIM = (
    f"print({VICTIM_SECRET!r})\n"
    "import time\n"
    f"try:\n    open('victim-note', 'w').write({VICTIM_SECRET!r})\nexcept OSError:\n    pass\n"
    "def add(a, b):\n    time.sleep(0.15)\n    return a + b\n"
)

#: Waits (up to 2 s) until another sandboxed run is alive, so the attack meets its victim.
FIND_VICTIMS = """
import os, time
def victims():
    found = []
    for entry in os.listdir('/proc'):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if b'runner.py' in open('/proc/%s/cmdline' % entry, 'rb').read():
                    found.append(int(entry))
            except OSError:
                pass
    return found
_end = time.time() + 2
while not victims() and time.time() < _end:
    time.sleep(0.01)
"""

#: Syscall numbers for attacks that go through ctypes (the C library may lack a wrapper).
SYSCALLS = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
NR = {'x86_64': dict(add_key=248, keyctl=250, request_key=249),
      'aarch64': dict(add_key=217, keyctl=219, request_key=218)}[os.uname().machine]
"""

ATTACKS: dict[str, str] = {
    # 1. take the server down: its output file, zombies, memory through children
    "symlink_output_to_dev_zero": (
        f"import os\nfor p in ('output', '/tmp/{MARKER}-out'):\n"
        "    try:\n        os.symlink('/dev/zero', p)\n    except OSError:\n        pass\n" + ADD
    ),
    "fifo_output": (
        f"import os\nfor p in ('output', '/tmp/{MARKER}-fifo'):\n"
        "    try:\n        os.mkfifo(p)\n    except OSError:\n        pass\n" + ADD
    ),
    "zombies_fill_the_pids_limit": (
        "import os\nfor _ in range(300):\n    try:\n        if os.fork() == 0:\n"
        "            os._exit(0)\n    except OSError:\n        break\n" + ADD
    ),
    "forty_children_of_40mb": (
        "import os, time\nfor _ in range(40):\n    try:\n        if os.fork() == 0:\n"
        "            x = bytearray(40 * 2**20)\n            time.sleep(30)\n            os._exit(0)\n"
        "    except OSError:\n        break\n" + ADD
    ),
    # 2. change another session's score
    "double_fork_setsid_then_signal": FIND_VICTIMS
    + (
        "import signal\ntry:\n    if os.fork() == 0:\n        os.setsid()\n"
        "        if os.fork() == 0:\n            for _ in range(300):\n"
        "                for pid in victims():\n                    try:\n"
        "                        os.kill(pid, signal.SIGSTOP)\n                    except OSError:\n"
        "                        pass\n                time.sleep(0.01)\n        os._exit(0)\n"
        "except OSError:\n    pass\n" + ADD
    ),
    "signal_other_runners_and_the_server": FIND_VICTIMS
    + (
        "import signal\nfor pid in victims() + [os.getppid(), 1]:\n"
        "    for sig in (signal.SIGSTOP, signal.SIGKILL):\n        try:\n            os.kill(pid, sig)\n"
        "        except OSError:\n            pass\n    try:\n        os.killpg(pid, signal.SIGKILL)\n"
        "    except OSError:\n        pass\n" + ADD
    ),
    "write_results_into_other_pipes": FIND_VICTIMS
    + (
        'line = b\'{"event": "value", "index": 0, "repr": "666"}\\n\' * 50\n'
        "for pid in victims() + [os.getppid()]:\n    try:\n        fds = os.listdir('/proc/%d/fd' % pid)\n"
        "    except OSError:\n        continue\n    for fd in fds:\n        try:\n"
        "            f = os.open('/proc/%d/fd/%s' % (pid, fd), os.O_WRONLY | os.O_NONBLOCK)\n"
        "            os.write(f, line)\n            os.close(f)\n        except OSError:\n"
        "            pass\n" + ADD
    ),
    "import__socket": "import _socket\n_socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)\n"
    + ADD,
    "rewrite_the_runner": "open(RUNNER_PATH, 'a').write('\\nraise SystemExit')\n" + ADD,
    # 3. rewards out of range
    "fake_results_on_every_fd": (  # the audit's 666.67: 2000 distinct passing indexes
        'import os\nfake = b\'\'.join(b\'{"event": "test", "index": %d, "passed": true}\\n\' % i '
        "for i in range(2000))\n"
        'fake += b\'\'.join(b\'{"event": "value", "index": %d, "repr": "5"}\\n\' % i '
        "for i in range(2000))\n"
        + OPEN_FDS
        + "for fd in open_fds():\n    if fd < 3:\n        continue\n    try:\n        os.write(fd, fake)\n"
        "    except OSError:\n        pass\n" + ADD
    ),
    "print_result_lines": (
        "for i in range(2000):\n"
        '    print(\'{"event": "value", "index": %d, "repr": "5"}\' % i)\n' + ADD
    ),
    "malformed_result_line": (
        "import os\n"
        + OPEN_FDS
        + "for fd in open_fds():\n    if fd < 3:\n        continue\n    try:\n"
        '        os.write(fd, b\'{not json\\n{"event": "load_error"}\\n{"event": "test"}\\n\')\n'
        "    except OSError:\n        pass\n" + ADD
    ),
    # 6. leaks between episodes (root mode in the audit; every mode here)
    "fill_dev_shm": (
        f"import os\nfor i in range(100):\n    try:\n"
        f"        with open('/dev/shm/{MARKER}-%d' % i, 'wb') as f:\n"
        "            f.write(b'x' * 2**20)\n    except OSError:\n        pass\n"
        "try:\n    fd = os.memfd_create('x')\n    os.write(fd, b'x' * 2**20)\nexcept OSError:\n"
        "    pass\n" + ADD
    ),
    "host_unix_socket": (
        "import _socket\ns = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)\n"
        "s.connect(UNIX_SOCKET_PATH)\ns.send(b'hello')\n" + ADD
    ),
    "read_other_sessions_output": FIND_VICTIMS
    + (
        "seen = []\nfor name in os.listdir('/tmp'):\n    try:\n"
        "        seen.append(open('/tmp/%s/output' % name).read())\n    except OSError:\n"
        "        pass\n"
        "for pid in victims():\n    try:\n        fds = os.listdir('/proc/%d/fd' % pid)\n"
        "    except OSError:\n        continue\n    for fd in fds:\n        try:\n"
        "            f = os.open('/proc/%d/fd/%s' % (pid, fd), os.O_RDONLY | os.O_NONBLOCK)\n"
        "            seen.append(os.read(f, 4096).decode('utf-8', 'replace'))\n"
        "        except OSError:\n            pass\n"
        "print('SEEN', seen)\n" + ADD
    ),
    "exec_a_shell": "import os\nos.execv('/bin/sh', ['sh', '-c', 'sleep 30'])\n" + ADD,
    # issue 22, still open after the first round: reads of the server's files, scratch space
    "read_server_files": (
        "import os\nfor p in (SECRET_PATH, '/proc/%d/environ' % os.getppid(), '/etc/passwd'):\n"
        "    try:\n        print('READ', p, open(p).read()[:300])\n    except OSError:\n"
        "        pass\n" + ADD
    ),
    "read_other_sessions_scratch": FIND_VICTIMS
    + (
        "import glob\nseen = []\nfor _ in range(30):\n"
        "    for p in glob.glob(os.path.join(os.path.dirname(os.getcwd()), 'coding-scratch-*', '*')):\n"
        "        try:\n            seen.append(open(p).read())\n        except OSError:\n"
        "            pass\n    time.sleep(0.01)\nprint('SEEN', seen)\n" + ADD
    ),
    "scratch_works": (
        "import os, tempfile\nwith tempfile.NamedTemporaryFile() as f:\n    f.write(b'kept')\n"
        "    f.flush()\n    assert open(f.name, 'rb').read() == b'kept'\n"
        "open('notes.txt', 'w').write('x')\nos.replace('notes.txt', 'notes2.txt')\n"
        "os.unlink('notes2.txt')\n" + ADD
    ),
    "fill_scratch": (
        "for i in range(2000):\n    try:\n        with open('fill-%d' % i, 'wb') as f:\n"
        "            f.write(b'x' * 2**20)\n    except OSError:\n        pass\n" + ADD
    ),
    "many_scratch_files": (
        "for i in range(100000):\n    try:\n        open('f%d' % i, 'w').close()\n"
        "    except OSError:\n        pass\n" + ADD
    ),
    "write_outside_the_scratch": (
        "import os\n"
        f"targets = ['/tmp/{MARKER}-w', '/dev/shm/{MARKER}-w', '../{MARKER}-w', RUNNER_PATH]\n"
        "open('mine', 'w').write('x')\n"
        "for t in targets:\n"
        "    for how in (lambda: open(t, 'a').write('x'), lambda: os.rename('mine', t),\n"
        "                lambda: os.truncate(t, 0), lambda: open(t, 'rb+').truncate(0),\n"
        "                lambda: os.link(t, 'linked'), lambda: os.mkdir(t)):\n"
        "        try:\n            how()\n        except OSError:\n            pass\n" + ADD
    ),
    # issue 35: the second round
    # /proc cannot be listed (Landlock): runs are found by their RLIMIT_AS, read with prlimit
    "prlimit_the_server_and_neighbours": (
        "import os, resource, time\nme, hit = os.getpid(), False\nend = time.time() + 1\n"
        "while not hit and time.time() < end:\n"
        "    for pid in range(max(2, me - 3000), me + 300):\n        try:\n"
        "            if pid != me and resource.prlimit(pid, resource.RLIMIT_AS)[0] == 256 * 2**20:\n"
        "                resource.prlimit(pid, resource.RLIMIT_AS, (2**20, 2**20))\n"
        "                print('ESCAPED prlimit on a neighbour', pid)\n                hit = True\n"
        "        except OSError:\n            pass\n"
        "try:\n    resource.prlimit(os.getppid(), resource.RLIMIT_NPROC, (1, 1))\n"
        "    print('ESCAPED prlimit on the server')\nexcept OSError:\n    pass\n" + ADD
    ),
    "keyring_outlives_the_run": SYSCALLS
    + (
        "made = 0\nfor i in range(200):\n"
        f"    name = b'{MARKER}-%d' % i\n"
        "    if libc.syscall(NR['add_key'], b'user', name, b'x', 1, -4) >= 0:\n"  # user keyring
        "        made += 1\n"
        "if made:\n    print('ESCAPED add_key', made)\n"
        "if libc.syscall(NR['keyctl'], 0, -4, 0) >= 0:\n    print('ESCAPED keyctl')\n"
        f"if libc.syscall(NR['request_key'], b'user', b'{MARKER}-0', None, 0) >= 0:\n"
        "    print('ESCAPED request_key')\n" + ADD
    ),
    "inotify_the_scratch_root": (
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = libc.inotify_init1(0)\nif fd >= 0:\n    print('ESCAPED inotify_init1')\n"
        "    for path in (os.path.dirname(os.getcwd()), '/tmp', '/dev/shm'):\n"
        "        if libc.inotify_add_watch(fd, path.encode(), 0xFFF) >= 0:\n"
        "            print('ESCAPED inotify_add_watch', path)\n" + ADD
    ),
    "hide_scratch_bytes": (  # nameless files: O_TMPFILE, and unlinked while open
        "import os\nheld = []\nfor i in range(24):\n    try:\n"
        "        fd = os.open('.', os.O_TMPFILE | os.O_RDWR, 0o600)\n"
        "        print('ESCAPED O_TMPFILE')\n        os.write(fd, b'x' * 2**20)\n"
        "        held.append(fd)\n    except OSError:\n        break\n"
        "for i in range(24 - len(held)):\n    try:\n"
        "        fd = os.open('hidden-%d' % i, os.O_CREAT | os.O_RDWR, 0o600)\n"
        "        os.unlink('hidden-%d' % i)\n        os.write(fd, b'x' * 2**20)\n"
        "        held.append(fd)\n    except OSError:\n        break\n" + ADD
    ),
    "thread_bomb": (
        "import threading\nthreading.stack_size(65536)\nstop = threading.Event()\n"
        "started = 0\nfor _ in range(400):\n    try:\n"
        "        threading.Thread(target=stop.wait, daemon=True).start()\n"
        "        started += 1\n    except RuntimeError:\n        break\n"
        "if started > 64:\n    print('ESCAPED threads', started)\n" + ADD
    ),
    "read_installed_packages": (
        "import glob, os, sys\nfolders = set()\n"
        "for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, '/opt/venv', '/usr',\n"
        "               '/usr/local'):\n"
        "    for kind in ('site-packages', 'dist-packages'):\n"
        "        folders.update(glob.glob(prefix + '/lib/python3*/' + kind))\n"
        "    folders.update(glob.glob(prefix + '/lib/python3/dist-packages'))\n"
        "for folder in sorted(folders):\n    try:\n        names = os.listdir(folder)\n"
        "        print('ESCAPED listed', folder)\n    except OSError:\n        continue\n"
        "    for name in names:\n        try:\n"
        "            open(os.path.join(folder, name, '__init__.py')).read(100)\n"
        "            print('ESCAPED read', folder, name)\n            break\n"
        "        except OSError:\n            pass\n"
        "for folder in ('/opt/venv/lib/python3.11/site-packages',) + tuple(folders):\n"
        "    try:\n        open(folder + '/coding_env/tasks.py').read(100)\n"
        "        print('ESCAPED the answers')\n    except OSError:\n        pass\n" + ADD
    ),
    "utime_the_runner": (
        "import os\nfor path in (RUNNER_PATH, os.path.dirname(RUNNER_PATH)):\n    try:\n"
        "        os.utime(path, (0, 0))\n        print('ESCAPED utime', path)\n"
        "    except OSError:\n        pass\n" + ADD
    ),
}


@dataclass
class Outcome:
    """One round: the attacker's and the victim's results, and what was left behind."""

    attack: str
    reward: float
    status: str
    output: str
    victim_reward: float
    victim_status: str
    runner_changed: bool
    left_processes: list[int]
    left_files: list[str]
    unix_connections: int = 0
    #: an honest submission after the round still scores 1.0 (the server was not harmed)
    server_ok: bool = True

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


#: What the sandbox answers, where an attack has one right answer.
EXPECTED_STATUS = {
    "fake_results_on_every_fd": "protocol_error",
    "malformed_result_line": "protocol_error",
    "print_result_lines": "output_limit",
    "import__socket": "load_error",
    "host_unix_socket": "load_error",
    "exec_a_shell": "load_error",
    "rewrite_the_runner": "load_error",
    "scratch_works": "ok",
    "fill_scratch": "scratch_limit",
    "many_scratch_files": "scratch_limit",
    "hide_scratch_bytes": "scratch_limit",
    "thread_bomb": "ok",
}


def check_invariants(outcome: Outcome) -> None:
    assert 0.0 <= outcome.reward <= 1.0, outcome
    assert (outcome.victim_reward, outcome.victim_status) == (1.0, "ok"), outcome
    assert not outcome.left_processes, outcome
    assert not outcome.left_files, outcome
    assert not outcome.runner_changed, outcome
    assert outcome.unix_connections == 0, outcome
    assert outcome.server_ok, outcome
    assert "ESCAPED" not in outcome.output, outcome
    assert VICTIM_SECRET not in outcome.output, outcome
    assert SERVER_SECRET not in outcome.output, outcome
    if outcome.attack in EXPECTED_STATUS:
        assert outcome.status == EXPECTED_STATUS[outcome.attack], outcome


def runner_path() -> Path:
    from coding_env import sandbox

    return sandbox.RUNNER


def sandbox_processes(runner: Path | str, own: bool = False) -> list[int]:
    """Processes running ``runner`` (this checkout's runner path, or ``"runner.py"`` for any
    sandboxed run, a container's included: their processes are in this /proc too); a forked
    child keeps its cmdline. ``own``: only this process's runs (under it or its server) and
    orphans (a run whose parent is gone escaped it), not another test process's run in progress
    (a run held up for seconds, a frozen one, is no leak of this round's)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if str(runner).encode() in cmd and (not own or _ours_or_orphan(int(entry))):
            found.append(int(entry))
    return found


def _ours_or_orphan(pid: int) -> bool:
    import psutil

    try:
        proc = psutil.Process(pid)
        return proc.ppid() <= 1 or any(p.pid == os.getpid() for p in proc.parents())
    except psutil.Error:  # gone meanwhile
        return False


def left_files() -> list[str]:
    """Files an attack left: its marked files, and any run's scratch folder (the tests give the
    server a scratch root of its own, so another process's runs are not counted)."""
    from coding_env.sandbox import scratch_root

    scratch = glob.glob(os.path.join(scratch_root(), "coding-scratch-*"))
    return sorted(
        glob.glob(f"/tmp/{MARKER}*")
        + glob.glob(f"/dev/shm/{MARKER}*")
        + glob.glob("/output")
        + scratch
    )


def program(attack: str, unix_socket: str = "/nonexistent", secret: str = "/nonexistent") -> str:
    """The attack's source, with the paths it aims at filled in."""
    head = (
        f"RUNNER_PATH = {str(runner_path())!r}\nUNIX_SOCKET_PATH = {unix_socket!r}\n"
        f"SECRET_PATH = {secret!r}\n"
    )
    return head + ATTACKS[attack]


def run_round(
    attack: str,
    submit: Callable[[str], tuple[float, str, str]] | None = None,
    source: str | None = None,
    secret_path: str | None = None,
) -> Outcome:
    """Run ``attack`` (or ``source``, a program of its own, under that label) while a victim session runs an honest submission; ``submit(code)`` returns
    ``(reward, status, output)`` (default: ``run_tests`` in this process). A world-writable unix
    socket listens meanwhile: ``unix_connections`` counts who reached it. ``SERVER_SECRET`` is in
    a file only this uid may read (``secret_path`` where the server runs elsewhere)."""
    submit = submit or _submit_here
    runner = runner_path()
    digest = hashlib.sha256(runner.read_bytes()).hexdigest()
    victim: dict[str, tuple[float, str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="coding-listener-") as folder:
        secret = os.path.join(folder, "secret")
        with open(os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(SERVER_SECRET)
        os.chmod(folder, 0o777)
        path = os.path.join(folder, "s")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(path)
            os.chmod(path, 0o777)
            listener.listen(16)
            listener.setblocking(False)
            thread = threading.Thread(target=lambda: victim.setdefault("r", submit(VICTIM)))
            thread.start()
            # the victim's run is under way before the attack starts (a victim already done ran)
            deadline = time.monotonic() + 30
            while not victim and not sandbox_processes("runner.py"):
                assert time.monotonic() < deadline, "the victim's run never started"
                time.sleep(0.01)
            code = program(attack, path, secret_path or secret) if source is None else source
            reward, status, output = submit(code)
            thread.join()
            server_ok = _still_serves(submit)
            connections = 0
            while True:
                try:
                    listener.accept()[0].close()
                    connections += 1
                except BlockingIOError:
                    break
    deadline = time.monotonic() + 3
    while sandbox_processes(runner, own=True) and time.monotonic() < deadline:
        time.sleep(0.05)
    return Outcome(
        attack,
        reward,
        status,
        output[-500:],
        victim["r"][0],
        victim["r"][1],
        hashlib.sha256(runner.read_bytes()).hexdigest() != digest,
        sandbox_processes(runner, own=True),
        left_files(),
        connections,
        server_ok,
    )


def _still_serves(submit: Callable[[str], tuple[float, str, str]]) -> bool:
    """One honest submission after the round: the server (its limits, its threads) is whole."""
    try:
        reward, status, _ = submit(ADD)
    except Exception:  # noqa: BLE001 - e.g. BlockingIOError: the server can no longer start a run
        return False
    return (reward, status) == (1.0, "ok")


def _submit_here(code: str) -> tuple[float, str, str]:
    from coding_env import TASKS_BY_ID, Limits, run_tests

    limits = Limits(cpu_seconds=2, memory_mb=256, output_bytes=65_536, wall_seconds=6.0)
    result = run_tests(code, TASKS_BY_ID["add"].tests, limits)
    return result.fraction, result.status, result.output
