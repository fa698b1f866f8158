"""coding_env: every task's tests against a reference solution, a real server, and one test per
attack (each followed by a health check and a normal episode: the server never goes down)."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from coding_env import TASKS, TASKS_BY_ID, CodeAction, CodingEnv, Limits, run_tests
from server_helpers import wait_until

from openenv_train.runtime import LocalProcessProvider

SECRET = "hunter2-coding-env-secret"
ROOT = os.geteuid() == 0
LIMITS = Limits(cpu_seconds=1, memory_mb=256, output_bytes=16_384, wall_seconds=4.0)

REFERENCE = {
    "add": "def add(a, b):\n    return a + b",
    "is_even": "def is_even(n):\n    return n % 2 == 0",
    "reverse_string": "def reverse_string(s):\n    return s[::-1]",
    "factorial": "import math\ndef factorial(n):\n    return math.factorial(n)",
    "fibonacci": "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a",
    "is_palindrome": "def is_palindrome(s):\n    t = [c.lower() for c in s if c.isalpha()]\n    return t == t[::-1]",
    "count_vowels": "def count_vowels(s):\n    return sum(c in 'aeiou' for c in s.lower())",
    "max_of_list": "def max_of_list(xs):\n    return max(xs)",
    "sum_digits": "def sum_digits(n):\n    return sum(int(c) for c in str(abs(n)))",
    "is_prime": "def is_prime(n):\n    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))",
    "gcd": "import math\ndef gcd(a, b):\n    return math.gcd(a, b)",
    "flatten": "def flatten(xs):\n    return [x for x_ in xs for x in x_]",
    "unique_sorted": "def unique_sorted(xs):\n    return sorted(set(xs))",
    "word_count": "from collections import Counter\ndef word_count(s):\n    return dict(Counter(s.split()))",
    "capitalize_words": "def capitalize_words(s):\n    return ' '.join(w[:1].upper() + w[1:] for w in s.split(' '))",
    "fizzbuzz": "def fizzbuzz(n):\n    return 'Fizz' * (n % 3 == 0) + 'Buzz' * (n % 5 == 0) or str(n)",
    "binary_search": "import bisect\ndef binary_search(xs, x):\n    i = bisect.bisect_left(xs, x)\n    return i if i < len(xs) and xs[i] == x else -1",
    "merge_sorted": "def merge_sorted(a, b):\n    return sorted(a + b)",
    "rotate_list": "def rotate_list(xs, k):\n    if not xs:\n        return []\n    k %= len(xs)\n    return xs[-k:] + xs[:-k] if k else list(xs)",
    "celsius_to_fahrenheit": "def celsius_to_fahrenheit(c):\n    return c * 9 / 5 + 32.0",
    "anagrams": "def anagrams(a, b):\n    return sorted(a) == sorted(b)",
    "second_largest": "def second_largest(xs):\n    s = sorted(set(xs))\n    return s[-2] if len(s) > 1 else None",
    "run_length": "import itertools\ndef run_length(s):\n    return ''.join(k + str(len(list(g))) for k, g in itertools.groupby(s))",
    "matrix_transpose": "def matrix_transpose(m):\n    return [list(r) for r in zip(*m)]",
    "count_words_longer": "def count_words_longer(s, n):\n    return sum(len(w) > n for w in s.split())",
    "power_set_size": "def power_set_size(xs):\n    return 2 ** len(set(xs))",
    "chunk": "def chunk(xs, n):\n    return [xs[i:i + n] for i in range(0, len(xs), n)]",
    "roman": (
        "def roman(n):\n    out = ''\n"
        "    for v, s in ((1000,'M'),(900,'CM'),(500,'D'),(400,'CD'),(100,'C'),(90,'XC'),(50,'L'),(40,'XL'),(10,'X'),(9,'IX'),(5,'V'),(4,'IV'),(1,'I')):\n"
        "        while n >= v:\n            out += s\n            n -= v\n    return out"
    ),
    "balanced": (
        "def balanced(s):\n    st = []\n    pairs = {')': '(', ']': '[', '}': '{'}\n    for c in s:\n"
        "        if c in '([{':\n            st.append(c)\n        elif c in pairs:\n"
        "            if not st or st.pop() != pairs[c]:\n                return False\n    return not st"
    ),
    "dedupe_keep_order": "def dedupe_keep_order(xs):\n    return list(dict.fromkeys(xs))",
    "triangle_kind": (
        "def triangle_kind(a, b, c):\n    x, y, z = sorted((a, b, c))\n    if x + y <= z:\n        return 'invalid'\n"
        "    return 'equilateral' if x == z else 'isosceles' if x == y or y == z else 'scalene'"
    ),
    "digits_to_words": (
        "def digits_to_words(n):\n    w = 'zero one two three four five six seven eight nine'.split()\n"
        "    return ' '.join(w[int(c)] for c in str(n))"
    ),
}


@pytest.fixture(scope="module")
def coding_url(tmp_path_factory) -> Iterator[str]:
    env = {
        "CODING_TEST_SECRET": SECRET,
        "CODING_CPU_SECONDS": "1",
        "CODING_WALL_SECONDS": "4",
        "CODING_OUTPUT_BYTES": "16384",
    }
    with LocalProcessProvider("coding_env.server.app:app", env=env, startup_timeout=120) as p:
        SERVER_PID[0] = p.pid
        yield p.base_url


SERVER_PID = [0]  # the module's coding server (its runs are the ones _no_runner_left checks)


def test_every_task_has_a_reference_that_passes_all_its_tests() -> None:
    assert len(TASKS) >= 30 and set(REFERENCE) == set(TASKS_BY_ID)
    for task in TASKS:
        result = run_tests(REFERENCE[task.id], task.tests, LIMITS)
        assert (result.status, result.passed) == ("ok", len(task.tests)), (task.id, result)


def test_wrong_code_gets_partial_credit_and_errors_say_why() -> None:
    result = run_tests("def is_even(n):\n    return True", TASKS_BY_ID["is_even"].tests, LIMITS)
    assert (result.passed, result.total, result.status) == (2, 4, "ok")
    assert any("wrong value" in e for e in result.errors)
    broken = run_tests("def add(a, b) return", TASKS_BY_ID["add"].tests, LIMITS)
    assert broken.status == "load_error" and "SyntaxError" in broken.errors[0]
    odd = run_tests("def add(a, b):\n    return {a, b}", TASKS_BY_ID["add"].tests, LIMITS)
    assert odd.passed == 0 and "returned a wrong value" in odd.errors[0]


def _submit(url: str, code: str, task_id: str = "add"):
    with CodingEnv(base_url=url, timeout=60).sync() as env:
        first = env.reset(task_id=task_id)
        assert first.observation.prompt.startswith("Write a Python function add(a, b)")
        return env.step(CodeAction(code=code))


def _still_serving(url: str) -> None:
    assert httpx.get(url + "/health", timeout=10).json()["status"] == "healthy"
    result = _submit(url, REFERENCE["add"])
    assert result.reward == 1.0 and result.done and result.observation.status == "ok"


OTHER_SERVERS = ("coding_env.server.app", "containerd-shim", "conmon")


def _left_runners() -> tuple[list[int], list[int]]:
    """Runner processes still under this module's server, and escaped ones (under no live coding
    server: re-parented away); runs under another server (another test process's, or one in a
    container) are someone else's and are left alone."""
    mine, escaped = [], []
    for proc in psutil.process_iter():
        try:
            if "coding_env/runner.py" not in " ".join(proc.cmdline()):
                continue
            owners = proc.parents()
            if any(p.pid == SERVER_PID[0] for p in owners):
                mine.append(proc.pid)
            elif not any(o in " ".join(p.cmdline()) for p in owners for o in OTHER_SERVERS):
                escaped.append(proc.pid)
        except psutil.Error:  # gone while being looked at
            continue
    return mine, escaped


def _no_runner_left() -> None:
    """No sandbox run outlived its run: none is left under this server once its step answered.
    An escaped runner may be another test's attack in progress, which its own server kills when
    that run ends (a few seconds): one still alive 30 s on is a leak, whoever's it is."""
    mine, escaped = _left_runners()
    assert not mine, f"sandbox processes {mine} outlived their run"
    deadline = time.monotonic() + 30
    while escaped and time.monotonic() < deadline:
        time.sleep(0.2)
        escaped = _left_runners()[1]
    assert not escaped, f"escaped sandbox processes {escaped} outlived their run"


def test_attack_infinite_loop(coding_url: str) -> None:
    result = _submit(coding_url, "def add(a, b):\n    while True:\n        pass")
    assert result.reward == 0.0 and result.observation.status in ("cpu_limit", "timeout")
    _no_runner_left()
    _still_serving(coding_url)


def test_attack_sleeping_forever_hits_the_wall_clock(coding_url: str) -> None:
    result = _submit(coding_url, "import time\ntime.sleep(3600)")
    assert result.reward == 0.0 and result.observation.status == "timeout"
    _no_runner_left()
    _still_serving(coding_url)


def test_attack_fork_bomb(coding_url: str) -> None:
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    result = _submit(coding_url, code)
    assert result.reward == 0.0 and result.observation.status != "ok"
    _no_runner_left()
    _still_serving(coding_url)


def test_attack_huge_output(coding_url: str) -> None:
    result = _submit(coding_url, "while True:\n    print('x' * 100000)")
    assert result.reward == 0.0 and result.observation.status == "output_limit"
    assert len(result.observation.output) <= 2000
    _still_serving(coding_url)


def test_attack_memory_bomb(coding_url: str) -> None:
    result = _submit(coding_url, "x = bytearray(4 * 1024 ** 3)")
    assert result.reward == 0.0 and "MemoryError" in result.observation.errors[0]
    _still_serving(coding_url)


def test_attack_os_exit_before_and_during_the_tests(coding_url: str) -> None:
    result = _submit(coding_url, "import os\nos._exit(0)")
    assert result.reward == 0.0 and result.observation.status == "crashed"
    code = "import os\ndef add(a, b):\n    if a == -1:\n        os._exit(0)\n    return a + b"
    result = _submit(coding_url, code)  # test 1 passes, test 2 kills the process
    assert result.observation.passed == 1 and result.observation.status == "crashed"
    assert result.reward == pytest.approx(1 / 3)
    _still_serving(coding_url)


def test_attack_reading_env_vars_and_secret_files(coding_url: str, tmp_path: Path) -> None:
    secret_file = tmp_path / "token"
    secret_file.write_text(SECRET)
    secret_file.chmod(stat.S_IRUSR | stat.S_IWUSR)
    code = f"""
import os
found = [k for k, v in os.environ.items() if {SECRET!r} in v]
for path in ("/proc/%d/environ" % os.getppid(), "/proc/1/environ", {str(secret_file)!r}):
    try:
        if {SECRET!r} in open(path, errors="replace").read():
            found.append(path)
    except OSError:
        pass
print(found)
def add(a, b):
    return a + b if not found else None
"""
    result = _submit(coding_url, code)
    if not ROOT:  # documented: without root the child keeps the server's uid and can read its files
        assert str(secret_file) in result.observation.output
        return
    assert SECRET not in result.observation.output
    assert result.observation.output.strip() == "[]" and result.reward == 1.0


def test_attack_network(coding_url: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        code = f"""
import socket
def add(a, b):
    try:
        s = socket.socket()
        s.settimeout(1)
        s.connect(("127.0.0.1", {port}))
        return "connected"
    except OSError:
        return a + b
"""
        result = _submit(coding_url, code)
    assert result.reward == 1.0, result.observation.errors
    assert result.observation.metadata["network"] == "seccomp"  # no socket of any family


def test_attack_killing_the_server(coding_url: str) -> None:
    code = "import os, signal\nfor pid in (os.getppid(), 1):\n    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass"
    result = _submit(coding_url, code)
    assert result.observation.status == "load_error" or result.reward == 0.0
    _still_serving(coding_url)


def test_bad_task_id_names_the_choices(coding_url: str) -> None:
    with CodingEnv(base_url=coding_url).sync() as env:
        with pytest.raises(Exception, match="task_id 'nope' is not a task; use one of add"):
            env.reset(task_id="nope")
        assert env.reset(seed=1).observation.total >= 2  # the session survived


def test_openenv_generic_client(coding_url: str) -> None:
    openenv_core = pytest.importorskip("openenv.core")
    with openenv_core.GenericEnvClient(base_url=coding_url).sync() as env:
        obs = env.reset(task_id="gcd").observation
        assert obs["function"] == "gcd"
        result = env.step({"code": REFERENCE["gcd"]})
        assert result.reward == 1.0 and result.done


def test_bad_result_lines_fail_the_submission_and_use_its_attempt(coding_url: str) -> None:
    """Result lines forged by the submission are its failure (reward 0, one attempt used), not an
    error of the server, and never a reward above 1."""
    forged = (
        'import os\nfake = b\'\'.join(b\'{"event": "test", "index": %d, "passed": true}\\n\' % i'
        " for i in range(2000)) + b'{not json\\n'\n"
        "for fd in range(3, 32):\n    try:\n        os.write(fd, fake)\n    except OSError:\n"
        "        pass\n" + REFERENCE["add"]
    )
    with CodingEnv(base_url=coding_url, timeout=60).sync() as env:
        env.reset(task_id="add", max_attempts=2)
        result = env.step(CodeAction(code=forged))
        assert (result.reward, result.observation.status) == (0.0, "protocol_error")
        assert result.observation.attempts_left == 1 and not result.done
        result = env.step(CodeAction(code=REFERENCE["add"]))
        assert result.reward == 1.0 and result.done


def test_a_run_works_when_the_servers_descriptors_pass_1024() -> None:
    """A busy server holds thousands of sockets: the sandbox's pipes get numbers past select()'s
    limit of 1024, and the run must still be read (poll, not select)."""
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(1100)]
    try:
        result = run_tests(REFERENCE["add"], TASKS_BY_ID["add"].tests, LIMITS)
        assert (result.status, result.passed) == ("ok", 3), result
    finally:
        for fd in held:
            os.close(fd)


_FROZEN_RUN = """
import json, sys
from coding_env import TASKS_BY_ID, Limits, run_tests
limits = Limits(wall_seconds=2.0, frozen_seconds=float(sys.argv[1]))
print("go", flush=True)
code = "f = open('started', 'w')\\nimport time\\ntime.sleep(1.0)\\ndef add(a, b):\\n    return a + b"
result = run_tests(code, TASKS_BY_ID["add"].tests, limits)
print(json.dumps({"status": result.status, "passed": result.passed, "total": result.total}))
"""


def _holds_open(server: psutil.Process, name: str) -> bool:
    """Whether a process under ``server`` has a file named ``name`` open."""
    for child in server.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if any(Path(f.path).name == name for f in child.open_files()):
                return True
    return False


def _run_frozen_for(seconds: float, forgive_s: float) -> dict:
    """A 1-s submission under a 2-s wall limit, its server (and the run) frozen with SIGSTOP
    for ``seconds`` mid-run, as ``docker pause`` freezes a whole container."""
    import json
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-c", _FROZEN_RUN, str(forgive_s)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "go"
        server = psutil.Process(proc.pid)
        # the submission itself has started (not only its runner, whose set-up a loaded machine
        # can stretch past any fixed wait): it holds its scratch file "started" open
        wait_until(lambda: _holds_open(server, "started"), 30, "the submission to start")
        frozen = [server, *server.children(recursive=True)]
        for p in frozen:
            p.suspend()
        time.sleep(seconds)
        for p in reversed(frozen):  # the run first: a thawed server may end it at once
            with contextlib.suppress(psutil.NoSuchProcess):
                p.resume()
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return json.loads(out.strip().splitlines()[-1])


def test_a_frozen_server_is_not_scored_a_timeout() -> None:
    """Frozen 3 s (past the 2-s wall limit) mid-run: the frozen time is not the submission's."""
    result = _run_frozen_for(3.0, forgive_s=30.0)
    assert result == {"status": "ok", "passed": result["total"], "total": result["total"]}


def test_the_frozen_time_forgiven_is_bounded() -> None:
    """The same freeze with only 0.5 s forgiven: the wall limit holds (a submission that starves
    its server on purpose gains at most ``frozen_seconds``)."""
    assert _run_frozen_for(3.0, forgive_s=0.5)["status"] == "timeout"
