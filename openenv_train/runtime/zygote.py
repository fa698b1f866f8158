"""Local env servers forked from one process that has imported the server stack already.

A fresh ``python -m openenv_train.runtime.launch`` spends about 0.6 s of CPU importing FastAPI,
pydantic, uvicorn and our server before it serves; a run that starts dozens of servers (or a
test suite that starts hundreds) pays it each time. The owner (the process that starts servers)
instead starts one *zygote* per interpreter: it imports that stack once, then forks a server per
request, which imports only its env's own modules (about 0.05 s).

Each forked server is what ``launch`` would have been: its own session and process group, the
owner's listening socket and log file as its file descriptors, the environment, working folder
and ``sys.path`` (cwd, then ``PYTHONPATH``) the owner asked for, and ``launch``'s own lifetime
guards (it dies with the zygote, which dies with the owner). Where a forked copy cannot import
the app (a package installed after the zygote started, a broken module), it ``exec``\\ s a fresh
``launch`` in place: same pid, same descriptors, the error text a fresh interpreter prints.

Wire: a ``SOCK_SEQPACKET`` pair (one JSON message per packet, descriptors as ``SCM_RIGHTS``).
Owner -> zygote: ``{"argv", "env", "cwd"}`` with [listening socket, log file] (``launch``'s
arguments as the owner would run it; the server's ``--fd`` and ``--parent-pid`` are set to the
received socket and the zygote). Zygote -> owner:
``{"pid"}`` once the server has its own session, ``{"exit": pid, "code"}`` when one ends (codes
as ``subprocess``'s: negative for a signal), ``{"ready": true}`` once after the imports.
``OPENENV_TRAIN_FORK_SERVERS=0`` turns it off (every server is a fresh interpreter again).

The same zygote, started with other ``preload`` modules, also forks any console-script style
program (:meth:`Zygote.run`: ``{"entry": "module:function", "argv", "env", "cwd", "path0"}``
with [stdin, stdout, stderr]): what would otherwise pay the same imports again in every process.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import Any

#: what a server imports before its env's own modules: imported once, in the zygote
PRELOAD = (
    "uvicorn",
    "fastapi",
    "openenv_train.runtime.launch",
    "openenv_train.server.app",
    "openenv_train.server.serve",
    "openenv_train.client",
)
MAX_PACKET = 160 * 1024  # below the socket buffer a SOCK_SEQPACKET message must fit in
LAUNCH = "openenv_train.runtime.launch"


def _pythonpath(env: Mapping[str, str]) -> list[str]:
    return [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]


#: the zygote's own PYTHONPATH entries (a forked server's are the ones its owner gave)
_ZYGOTE_PYTHONPATH: list[str] = []


def enabled() -> bool:
    return os.environ.get("OPENENV_TRAIN_FORK_SERVERS", "1").strip() not in {"0", "false", "no"}


class ForkedProcess:
    """The owner's handle on one forked process: the subset of ``subprocess.Popen`` the local
    provider uses (``pid``, ``poll``, ``wait``, ``returncode``)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._ended = threading.Event()

    def _exited(self, code: int) -> None:
        self.returncode = code
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"forked pid {self.pid}", timeout or 0)
        assert self.returncode is not None
        return self.returncode


class Zygote:
    """One zygote process of this owner; :meth:`spawn` forks a server from it, :meth:`run` any
    program whose imports ``preload`` names."""

    def __init__(
        self, popen: Callable[..., subprocess.Popen[bytes]], preload: Sequence[str] = PRELOAD
    ) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = ours
        with theirs:
            self._proc = popen(
                [sys.executable, "-m", __name__, "--fd", str(theirs.fileno()), "--parent-pid",
                 str(os.getpid()), "--preload", ",".join(preload)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,  # a terminal's Ctrl-C is the owner's to handle
            )  # fmt: skip
        self._lock = threading.Lock()  # one request at a time: its reply is the next "pid"
        self._replies: list[dict[str, Any]] = []
        self._reply = threading.Condition()
        self._forked: dict[int, ForkedProcess] = {}
        self._early_exits: dict[int, int] = {}  # an exit read before its "pid" reply
        self.alive = True
        threading.Thread(target=self._read, name="openenv-train-zygote", daemon=True).start()

    def close(self) -> None:
        """Stop the zygote (its servers die with it)."""
        with suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        with suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)

    def wait_ready(self, timeout: float) -> bool:
        return self._next_reply(timeout).get("ready") is True

    def spawn(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str, fds: Sequence[int]
    ) -> ForkedProcess:
        """Fork a server running ``launch`` with ``argv`` on the socket ``fds[0]``, logging to
        ``fds[1]``."""
        return self._fork({"argv": list(argv), "env": dict(env), "cwd": cwd}, fds)

    def run(
        self,
        entry: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        stdio: Sequence[int],
        path0: str | None = None,
    ) -> ForkedProcess:
        """Fork what a console script for ``entry`` (``module:function``) would be, or
        ``python -m entry`` (a module name alone): ``argv`` (``argv[0]`` the script's path),
        ``stdio`` as its descriptors 0 to 2, ``path0`` first on ``sys.path`` (the script's
        folder; the working folder when None, as ``python -m``)."""
        request = {"entry": entry, "argv": list(argv), "env": dict(env), "cwd": cwd}
        return self._fork({**request, "path0": path0 or cwd}, stdio)

    def _fork(self, request: dict[str, Any], fds: Sequence[int]) -> ForkedProcess:
        message = json.dumps(request).encode()
        if len(message) > MAX_PACKET:
            raise OSError("the environment is too large to hand to the zygote")
        with self._lock:
            socket.send_fds(self._sock, [message], list(fds))
            reply = self._next_reply(30.0)
        if "pid" not in reply:
            raise OSError(f"the zygote could not fork: {reply.get('error', reply)}")
        forked = ForkedProcess(int(reply["pid"]))
        with self._reply:
            self._forked[forked.pid] = forked
            if forked.pid in self._early_exits:
                forked._exited(self._early_exits.pop(forked.pid))
        return forked

    def _next_reply(self, timeout: float) -> dict[str, Any]:
        with self._reply:
            if not self._reply.wait_for(lambda: self._replies or not self.alive, timeout):
                raise OSError(f"the zygote did not answer within {timeout} s")
            return self._replies.pop(0) if self._replies else {"error": "the zygote exited"}

    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(MAX_PACKET)
            except OSError:
                data = b""
            if not data:
                break
            message = json.loads(data)
            with self._reply:
                if "exit" in message:
                    pid, code = int(message["exit"]), int(message["code"])
                    forked = self._forked.pop(pid, None)
                    if forked is not None:
                        forked._exited(code)
                    else:
                        self._early_exits[pid] = code
                else:
                    self._replies.append(message)
                    self._reply.notify_all()
        with self._reply:  # the zygote is gone, and its servers with it (PDEATHSIG)
            self.alive = False
            for forked in self._forked.values():
                forked._exited(-signal.SIGKILL)
            self._forked.clear()
            self._reply.notify_all()
        with suppress(OSError):
            self._sock.close()
        with suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)


#: by owner pid (a forked copy of the owner starts its own) and preloaded modules
_zygotes: dict[tuple[int, tuple[str, ...]], Zygote | None] = {}
_zygotes_lock = threading.Lock()


def zygote_for(
    popen: Callable[..., subprocess.Popen[bytes]], preload: Sequence[str] = PRELOAD
) -> Zygote | None:
    """This process's zygote that imports ``preload`` (started on first use, with this
    interpreter), or None where forking is off or the zygote could not start (the caller then
    starts a fresh interpreter)."""
    if not enabled() or not hasattr(socket, "send_fds"):
        return None
    key = (os.getpid(), tuple(preload))
    with _zygotes_lock:
        if key in _zygotes:
            zygote = _zygotes[key]
            if zygote is None or zygote.alive:
                return zygote
        zygote = None
        try:
            zygote = Zygote(popen, preload)
            ready = zygote.wait_ready(60.0)
        except OSError:
            ready = False
        if zygote is not None and not ready:
            zygote.close()
            zygote = None
        _zygotes[key] = zygote
        return zygote


# ---- the zygote process ------------------------------------------------------------------------


def _child(request: dict[str, Any], fds: list[int], ready_w: int, keep: Sequence[int]) -> None:
    """In the forked copy: become what ``python -m launch <argv>`` (or the console script of
    ``request["entry"]``) would be, then run it."""
    os.setsid()  # its own session and process group: the owner's stop kills its children too
    os.write(ready_w, b"s")
    os.close(ready_w)
    for fd in keep:
        with suppress(OSError):
            os.close(fd)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    if "entry" in request:
        _run_entry(request, fds)
    listen_fd, log_fd = fds
    devnull = os.open(os.devnull, os.O_RDONLY)
    _stdio([devnull, log_fd, log_fd], unbuffered=True)
    argv = list(request["argv"])
    argv[argv.index("--fd") + 1] = str(listen_fd)
    argv[argv.index("--parent-pid") + 1] = str(os.getppid())  # launch's guards watch this zygote
    _enter(request, None)
    sys.argv = [LAUNCH, *argv]
    try:
        module = argv[argv.index("--app") + 1].split(":", 1)[0]
        importlib.import_module(module)
    except BaseException:  # noqa: BLE001 - a fresh interpreter says why, as it always has
        os.set_inheritable(listen_fd, True)
        os.execve(sys.executable, [sys.executable, "-m", LAUNCH, *argv], request["env"])
    from openenv_train.runtime import launch

    _finish(lambda: launch.main(argv))


def _run_entry(request: dict[str, Any], stdio: list[int]) -> None:
    """A console script's process: ``entry``'s function with ``argv``; dies with the zygote
    (which dies with its owner), so an owner never loses sight of a run."""
    from openenv_train.runtime.launch import _die_with_parent

    _die_with_parent()
    _stdio(stdio, unbuffered=bool(request["env"].get("PYTHONUNBUFFERED")))
    module, _, function = request["entry"].partition(":")

    def program() -> Any:
        _enter(request, request["path0"])  # a missing folder fails here, as a traceback
        sys.argv = list(request["argv"])
        if function:
            return getattr(importlib.import_module(module), function)()
        import runpy  # ``python -m module``: it runs as ``__main__``, ``sys.argv[0]`` its file

        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0

    _finish(program)


def _stdio(fds: list[int], unbuffered: bool) -> None:
    """The received descriptors become 0, 1 and 2 (each closed once it is duplicated);
    ``unbuffered``: stdout and stderr write through, as ``python -u`` has them."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in set(fds) - {0, 1, 2}:
        os.close(fd)
    if unbuffered:
        for stream in (sys.stdout, sys.stderr):
            with suppress(Exception):
                stream.reconfigure(write_through=True)  # type: ignore[union-attr]


def _enter(request: dict[str, Any], path0: str | None) -> None:
    """The environment, working folder and ``sys.path`` the owner asked for: ``path0`` (the
    working folder when None, as ``python -m``), then PYTHONPATH, then the interpreter's own."""
    env = request["env"]
    os.environ.clear()
    os.environ.update(env)
    os.chdir(request["cwd"])
    extra = _pythonpath(env)
    base = [p for p in sys.path[1:] if p not in _ZYGOTE_PYTHONPATH]
    sys.path[:] = [path0 or os.getcwd(), *extra, *[p for p in base if p not in extra]]
    importlib.invalidate_caches()


def _finish(body: Callable[[], Any]) -> None:
    """Run ``body`` and end as an interpreter would: its exit code (a ``SystemExit``'s too), a
    traceback for anything else, Ctrl-C's signal, non-daemon threads joined, ``atexit`` run
    (coverage and logging flush as at a normal exit)."""
    code: Any = 1
    interrupted = False
    try:
        code = body()
    except SystemExit as exc:
        code = exc.code
    except BaseException as exc:  # noqa: BLE001 - printed, as a fresh interpreter would
        import traceback

        traceback.print_exc()
        interrupted = isinstance(exc, KeyboardInterrupt)
    finally:
        import atexit
        import threading

        with suppress(Exception):
            threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
        if isinstance(code, str):
            print(code, file=sys.stderr)
        for stream in (sys.stdout, sys.stderr):
            with suppress(Exception):
                stream.flush()
        if interrupted:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        os._exit(0 if code is None else code if isinstance(code, int) else 1)


def serve(sock: socket.socket, parent_pid: int) -> None:
    """Answer fork requests until the owner goes; report every server that ends."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wakeup fd is written
    keep = [sock.fileno(), wake_r, wake_w]

    def send(message: dict[str, Any]) -> None:
        sock.send(json.dumps(message).encode())

    def reap() -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            send({"exit": pid, "code": os.waitstatus_to_exitcode(status)})

    send({"ready": True})
    while os.getppid() == parent_pid:
        readable, _, _ = select.select([sock, wake_r], [], [], 1.0)
        if wake_r in readable:
            with suppress(BlockingIOError):
                os.read(wake_r, 4096)
        reap()
        if sock not in readable:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_PACKET, 3)
        except OSError:
            return
        if not data:
            return  # the owner closed its end
        try:
            request = json.loads(data)
            ready_r, ready_w = os.pipe()
            pid = os.fork()
        except (OSError, ValueError) as exc:
            for fd in fds:
                os.close(fd)
            send({"error": str(exc)})
            continue
        if pid == 0:
            os.close(ready_r)
            _child(request, fds, ready_w, keep)  # never returns
        os.close(ready_w)
        os.read(ready_r, 1)  # the server has its own session: the owner may signal its group
        os.close(ready_r)
        for fd in fds:
            os.close(fd)
        send({"pid": pid})


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog=__name__, description=__doc__.split("\n\n")[0])
    parser.add_argument("--fd", type=int, required=True, help="the owner's SOCK_SEQPACKET end")
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--preload", default=",".join(PRELOAD), help="modules, comma-separated")
    args = parser.parse_args(argv)
    from openenv_train.runtime.launch import _die_with_parent

    _die_with_parent()  # the owner's spawner thread gone: so are we (and our servers with us)
    if os.getppid() != args.parent_pid:
        return 70
    _ZYGOTE_PYTHONPATH.extend(_pythonpath(os.environ))
    for name in filter(None, args.preload.split(",")):
        importlib.import_module(name)
    sock = socket.socket(fileno=args.fd)
    serve(sock, args.parent_pid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
