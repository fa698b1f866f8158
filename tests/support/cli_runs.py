"""``openenv-train`` run by the tests as users run it: a process of its own, its exit code and
output, its own session for Ctrl-C. One place for every test that starts the CLI.

A fresh ``openenv-train train`` spends about 5 of its 7 CPU seconds importing torch,
transformers, TRL and pandas; the suite runs it a few dozen times. So a run is forked from a
zygote (``openenv_train.runtime.zygote``, the one that forks env servers) that has imported
them already, once per test worker: the same entry point (``openenv_train.cli.main:main``),
``argv``, ``sys.path`` as the console script's, environment and working folder, in a process
of its own. A fresh interpreter is still used where a fork could differ: ``fresh=True``, an
environment that changes what those imports read (``HF_*``, ``TRANSFORMERS_*``, ``TORCH*``,
...), or forking turned off (``OPENENV_TRAIN_FORK_SERVERS=0``, or
``OPENENV_TRAIN_TEST_FRESH_CLI=1`` for the CLI runs alone, to compare). The wheel tests
(tests/packaging) run the installed console script itself.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from functools import partial
from pathlib import Path

from processes import default_stop_signals

from openenv_train.runtime import zygote

ROOT = Path(__file__).resolve().parents[2]
ENTRY = "openenv_train.cli.main:main"
#: what ``train`` and ``eval`` import before they do anything (imported once, in the zygote)
PRELOAD = (
    "openenv_train.cli.main",
    "openenv_train.training.lifecycle",
    "openenv_train.training.offpolicy",
    "transformers.trainer_utils",
    "trl",
    "pandas",
    "matplotlib.pyplot",
)
#: environment variables read while those modules import (rich's consoles, made at import,
#: read the terminal's): a run that sets them differently gets a fresh interpreter
IMPORT_TIME = ("HF_", "HUGGINGFACE", "TRANSFORMERS", "TORCH", "PYTORCH", "OMP_", "MKL_",
               "TOKENIZERS", "MPL", "PYTHONHASHSEED", "PYTHONWARNINGS", "COLUMNS", "LINES",
               "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "TTY_", "JUPYTER")  # fmt: skip


def cli() -> list[str]:
    """The ``openenv-train`` script of this environment (``python -m openenv_train`` if absent)."""
    exe = shutil.which("openenv-train", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "openenv_train"]


def cli_env(**extra: str) -> dict[str, str]:
    """This process's environment, wide columns (tables are not cut), TRL's notice off."""
    return {**os.environ, "COLUMNS": "200", "TRL_EXPERIMENTAL_SILENCE": "1", **extra}


class CliProcess:
    """A run of the CLI: the part of ``subprocess.Popen`` the tests use, for a forked run or a
    fresh one alike."""

    def __init__(self, proc: subprocess.Popen[str] | zygote.ForkedProcess,
                 stdout: io.TextIOBase | None, stderr: io.TextIOBase | None) -> None:  # fmt: skip
        self._proc = proc
        self.pid = proc.pid
        self.stdout = stdout
        self.stderr = stderr

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    def poll(self) -> int | None:
        return self._proc.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self._proc.wait(timeout)

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # as Popen: never a pid that may have been reused
            with suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """The rest of stdout and stderr once the run has ended (killed after ``timeout``)."""
        out: dict[int, str] = {}
        readers = [threading.Thread(target=lambda i=i, s=s: out.__setitem__(i, s.read()),
                                    daemon=True)
                   for i, s in enumerate((self.stdout, self.stderr)) if s is not None]  # fmt: skip
        for reader in readers:
            reader.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            for reader in readers:
                reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
                if reader.is_alive():
                    raise subprocess.TimeoutExpired(cli(), timeout or 0)
            self.wait(None if deadline is None else max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            self.wait(30)
            raise
        for stream in (self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        return out.get(0, ""), out.get(1, "")


_zygote_env: dict[int, dict[str, str]] = {}  # by pid: what this process's CLI zygote imported under


def _cli_zygote() -> tuple[zygote.Zygote, dict[str, str]] | None:
    """This process's CLI zygote and the environment it imported under (None where it could
    not start: runs are fresh interpreters then)."""
    env = _zygote_env.setdefault(os.getpid(), cli_env())  # what most runs are given
    # Ctrl-C as at a terminal, however the tests were started (its forks inherit it)
    popen = partial(subprocess.Popen, env=env, preexec_fn=default_stop_signals)
    started = zygote.zygote_for(popen, PRELOAD)
    return None if started is None else (started, env)


def _forkable(env: Mapping[str, str], fresh: bool) -> tuple[zygote.Zygote, dict[str, str]] | None:
    if fresh or os.environ.get("OPENENV_TRAIN_TEST_FRESH_CLI") or not zygote.enabled():
        return None
    if not cli()[0].endswith("openenv-train"):
        return None
    got = _cli_zygote()
    if got is None:
        return None
    keys = {k for k in {*env, *got[1]} if k.upper().startswith(IMPORT_TIME)}
    return None if any(env.get(k) != got[1].get(k) for k in keys) else got


def start_cli(
    args: Sequence[str],
    cwd: Path | str = ROOT,
    env: Mapping[str, str] | None = None,
    *,
    merge_stderr: bool = True,
    fresh: bool = False,
) -> CliProcess:
    """``openenv-train ARGS`` in ``cwd``, in a session of its own (Ctrl-C goes to its group),
    output piped as text (stderr into stdout unless ``merge_stderr`` is False)."""
    env = dict(cli_env() if env is None else env)
    forkable = _forkable(env, fresh)
    if forkable is None:
        proc = subprocess.Popen(
            cli() + list(args), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            text=True, start_new_session=True, preexec_fn=default_stop_signals,
        )  # fmt: skip
        return CliProcess(proc, proc.stdout, proc.stderr)  # type: ignore[arg-type]
    script = cli()[0]
    out_r, out_w = os.pipe()
    err_r, err_w = (out_r, out_w) if merge_stderr else os.pipe()
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        forked = forkable[0].run(ENTRY, [script, *args], env, str(cwd),
                                 [devnull, out_w, err_w], path0=str(Path(script).parent))  # fmt: skip
    finally:
        for fd in {devnull, out_w, err_w}:
            os.close(fd)
    stdout = open(out_r, encoding="utf-8", errors="replace")  # noqa: SIM115 - the caller's
    stderr = None if merge_stderr else open(err_r, encoding="utf-8", errors="replace")  # noqa: SIM115
    return CliProcess(forked, stdout, stderr)


def run_cli(
    args: Sequence[str],
    cwd: Path | str = ROOT,
    timeout: float = 600,
    *,
    fresh: bool = False,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    """``openenv-train ARGS`` to its end: exit code, stdout and stderr apart (``env``: variables
    added to :func:`cli_env`)."""
    proc = start_cli(args, cwd, cli_env(**env), merge_stderr=False, fresh=fresh)
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode is not None
    return subprocess.CompletedProcess(cli() + list(args), proc.returncode, out, err)


def read_until(proc: CliProcess, needle: str, timeout: float = 60) -> list[str]:
    """The output lines up to the first that contains ``needle`` (fails if the process ends)."""
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        lines.append(line.rstrip("\n"))
        if needle in line:
            return lines
    raise AssertionError(f"no {needle!r} in the output:\n" + "\n".join(lines))


def stop(proc: CliProcess) -> int:
    """Ctrl-C to the whole process group (the reloader's child too); its exit status."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert proc.returncode is not None
    return proc.returncode
