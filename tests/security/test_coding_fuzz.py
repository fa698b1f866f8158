"""A fuzzer of hostile submissions: random programs that fork, write files, signal, open sockets,
print and write result-like lines, exit early, each run next to an honest victim session.

Invariants: the server (this process) stays up, the victim's reward is unchanged, every reward is
in range, nothing is left behind (processes, files). The test run's ``ci`` profile runs a few
programs (each takes about a second); ``make fuzz`` (``--hypothesis-profile=long``) runs 200.
"""

from __future__ import annotations

import pytest
from attacks import MARKER, check_invariants, run_round
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.fuzz

SIGNALS = ("SIGKILL", "SIGSTOP", "SIGTERM", "SIGSEGV", "SIGINT")
FAMILIES = ("AF_INET", "AF_INET6", "AF_UNIX", "AF_NETLINK", "AF_PACKET")
TARGETS = ("os.getppid()", "1", "-1", "0", "os.getpid() + 1", "os.getpid() - 1")

result_line = st.builds(
    lambda kind, index, extra: f'{{"event": "{kind}", "index": {index}{extra}}}',
    st.sampled_from(["value", "test", "done", "start", "load_error", "sandbox_error", "x"]),
    st.integers(-3, 3000),
    st.sampled_from(["", ', "repr": "5"', ', "passed": true', ', "repr": "[[[["', ', "error": 1']),
)

snippet = st.one_of(
    st.just("os.fork()"),
    st.just("os.setsid()"),
    st.just("import subprocess; subprocess.Popen(['sleep', '30'])"),
    st.builds(lambda n: f"open('/tmp/{MARKER}-{n}', 'w').write('x')", st.integers(0, 9)),
    st.builds(
        lambda n: f"open('/dev/shm/{MARKER}-{n}', 'wb').write(b'x' * 2**20)", st.integers(0, 9)
    ),
    st.builds(
        lambda target, sig: f"import signal; os.kill({target}, signal.{sig})",
        st.sampled_from(TARGETS),
        st.sampled_from(SIGNALS),
    ),
    st.builds(
        lambda fam: f"import _socket; _socket.socket(_socket.{fam}, _socket.SOCK_STREAM)",
        st.sampled_from(FAMILIES),
    ),
    st.builds(lambda line, n: f"print({line!r} * {n})", result_line, st.integers(1, 50)),
    st.builds(
        lambda fd, line, n: f"os.write({fd}, {(line + chr(10)).encode()!r} * {n})",
        st.integers(0, 31),
        result_line,
        st.integers(1, 500),
    ),
    st.builds(lambda n: f"x = bytearray({n} * 2**20)", st.integers(1, 512)),
    st.builds(lambda s: f"import time; time.sleep({s})", st.sampled_from([0, 0.01, 0.1])),
    st.builds(lambda code: f"os._exit({code})", st.integers(0, 3)),
    st.just("raise SystemExit"),
)
solution = st.sampled_from(
    [
        "def add(a, b):\n    return a + b",
        "def add(a, b):\n    return a - b",
        "def add(a, b):\n    return {a, b}",
        'def add(a, b):\n    print(\'{"event": "done"}\')\n    return a + b',
        "",
    ]
)


def _program(snippets: list[str], at_end: list[str], defined: str) -> str:
    """Snippets at load time, the solution, and more snippets inside the function under test."""
    head = "import os\n" + "".join(
        f"try:\n    {s}\nexcept BaseException:\n    pass\n" for s in snippets
    )
    if not defined:
        return head
    inside = "".join(
        f"    try:\n        {s}\n    except BaseException:\n        pass\n" for s in at_end
    )
    name, body = defined.split("\n", 1)
    return head + name + "\n" + inside + body + "\n"


def _examples() -> int:
    """A short run by default (each example is a second); ``make fuzz`` asks for 1000: 200 here."""
    return 6 if settings.default.max_examples < 1000 else 200


@settings(max_examples=_examples(), database=None)
@given(
    snippets=st.lists(snippet, max_size=5),
    at_end=st.lists(snippet, max_size=2),
    defined=solution,
)
def test_hostile_programs_fail_only_their_own_episode(snippets, at_end, defined) -> None:
    outcome = run_round("fuzz", source=_program(snippets, at_end, defined))
    check_invariants(outcome)
