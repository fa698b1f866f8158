"""A ``python -m module`` harness program forked from a zygote, behind asyncio's process API.

The reference agent spends about 0.9 s of CPU importing the OpenAI and MCP SDKs before it says
``ready``; an env server that starts an agent per episode pays it every episode (forked: a few
hundredths of a second). With
``HarnessConfig.preload`` set, the server's zygote for those modules (``runtime.zygote``, one per
server process, started on first use) imports them once and each start forks from it:
``python -m module`` as a fresh interpreter would run it (its ``sys.argv``, environment, working
folder, its own session), with pipes for stdio. :class:`ForkedProgram` offers what
``ProcessHarnessAdapter`` uses of ``asyncio.subprocess.Process``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ..runtime.local import popen_on_spawner
from ..runtime.zygote import ForkedProcess, Zygote, zygote_for


def python_module(command: Sequence[str]) -> str | None:
    """The module of a ``[this interpreter, "-m", module, ...]`` command, else None."""
    if len(command) >= 3 and command[0] == sys.executable and command[1] == "-m":
        return command[2]
    return None


class ForkedProgram:
    """A forked program: ``pid``, ``returncode``, ``wait()`` and ``stdin``/``stdout``/``stderr``
    streams, as ``asyncio.subprocess.Process`` has them."""

    def __init__(
        self,
        forked: ForkedProcess,
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
    ) -> None:
        self._forked = forked
        self.pid = forked.pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr

    @property
    def returncode(self) -> int | None:
        return self._forked.returncode

    async def wait(self) -> int:
        if self._forked.returncode is None:
            await asyncio.to_thread(self._forked.wait)
        self.stdin.close()  # its pipe, as asyncio's process closes it
        assert self._forked.returncode is not None
        return self._forked.returncode


async def start_forked(
    command: Sequence[str],
    preload: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    limit: int,
) -> ForkedProgram | None:
    """``command`` (``python -m module ...``) forked from this process's zygote for
    ``preload``, or None where it cannot be (another interpreter, forking off, no zygote)."""
    module = python_module(command)
    if module is None or not preload or not os.path.isdir(cwd):
        return None  # a fresh interpreter (which says what is wrong with the folder)
    zygote = await asyncio.to_thread(zygote_for, popen_on_spawner, tuple(preload))
    if zygote is None:
        return None
    loop = asyncio.get_running_loop()
    pending = loop.run_in_executor(None, _fork, zygote, module, command, env, cwd)
    try:
        got = await asyncio.shield(pending)
    except asyncio.CancelledError:  # the fork goes on in its thread: undo it when it is done
        pending.add_done_callback(_discard)
        raise
    if got is None:
        return None
    forked, (in_w, out_r, err_r) = got
    files = [os.fdopen(out_r, "rb", 0), os.fdopen(err_r, "rb", 0), os.fdopen(in_w, "wb", 0)]
    transports: list[asyncio.BaseTransport] = []
    readers = [asyncio.StreamReader(limit=limit, loop=loop) for _ in range(2)]
    try:
        for reader, file in zip(readers, files[:2], strict=True):
            transport, _ = await loop.connect_read_pipe(
                lambda r=reader: asyncio.StreamReaderProtocol(r, loop=loop), file
            )
            transports.append(transport)
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), files[2]
        )
    except BaseException:  # cancelled while wiring the pipes: nothing may be left running
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(forked.pid, signal.SIGKILL)
        for transport in transports:
            transport.close()
        for file in files[len(transports) :]:
            file.close()
        raise
    stdin = asyncio.StreamWriter(transport, protocol, None, loop)
    return ForkedProgram(forked, stdin, readers[0], readers[1])


def _fork(
    zygote: Zygote, module: str, command: Sequence[str], env: Mapping[str, str], cwd: str
) -> tuple[ForkedProcess, tuple[int, int, int]] | None:
    """Fork the program with three new pipes as its stdio; our ends of them (stdin's write end,
    stdout's and stderr's read ends), or None (then nothing is left open)."""
    (in_r, in_w), (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe(), os.pipe()
    forked: ForkedProcess | None = None
    try:
        forked = zygote.run(module, [module, *command[3:]], env, cwd, [in_r, out_w, err_w])
    except OSError:
        pass  # a fresh interpreter then
    finally:
        for fd in (in_r, out_w, err_w):  # the program's ends: it has its own copies
            os.close(fd)
    if forked is None:
        for fd in (in_w, out_r, err_r):
            os.close(fd)
        return None
    return forked, (in_w, out_r, err_r)


def _discard(done: asyncio.Future[Any]) -> None:
    """A fork whose start was cancelled: stop the program and close our ends of its pipes."""
    got = None if done.cancelled() or done.exception() else done.result()
    if got is not None:
        forked, fds = got
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(forked.pid, signal.SIGKILL)
        for fd in fds:
            os.close(fd)
