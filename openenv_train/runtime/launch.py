"""Server launcher run as ``python -m openenv_train.runtime.launch --app pkg.mod:app ...``.

It exists so a server can never outlive the process that started it:
- ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills us when the forking *thread* dies;
- a watchdog thread polls our parent pid and exits as soon as we are re-parented, which also
  covers the owner dying by SIGKILL from any thread.
The listening socket can be inherited from the owner (``--fd``), so no port race is possible.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import os
import signal
import socket
import sys
import threading
import time

PR_SET_PDEATHSIG = 1


def serve_argv(app: str, port: int, python: str = "python3") -> list[str]:
    """The command that serves ``app`` on every interface of a container or sandbox at ``port``
    (isolated machines: 0.0.0.0 there is reached only through what publishes the port)."""
    return [python, "-m", "openenv_train.runtime.launch", "--app", app,
            "--host", "0.0.0.0", "--port", str(port)]  # fmt: skip


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the watchdog still covers it


def _watchdog(parent_pid: int, interval: float = 0.25) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(70)  # the owner is gone: never become an orphan server
        time.sleep(interval)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="openenv_train.runtime.launch", description=__doc__)
    parser.add_argument(
        "--app", required=True, help="ASGI app import path, e.g. echo_env.server.app:app"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--fd", type=int, default=None, help="an already bound listening socket")
    parser.add_argument("--parent-pid", type=int, default=None)
    parser.add_argument(
        "--ws", default=None, help="a uvicorn ws implementation instead of the server's own"
    )
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    if args.fd is None and args.port is None:
        parser.error("give --fd (an inherited socket) or --port")

    if args.parent_pid is not None:
        _die_with_parent()
        if os.getppid() != args.parent_pid:
            return 70
        threading.Thread(target=_watchdog, args=(args.parent_pid,), daemon=True).start()

    import uvicorn

    from openenv_train.server.serve import uvicorn_kwargs  # the settings ``serve()`` uses

    overrides = {"ws": args.ws} if args.ws else {}
    config = uvicorn.Config(
        args.app,
        host=args.host,
        port=args.port or 0,
        access_log=False,
        lifespan="auto",
        timeout_graceful_shutdown=2,
        **uvicorn_kwargs(log_level=args.log_level, **overrides),
    )
    server = uvicorn.Server(config)
    sockets = None
    if args.fd is not None:
        sock = socket.socket(fileno=args.fd)
        sock.setblocking(False)
        sockets = [sock]
    print(f"openenv-train launcher: serving {args.app} (pid {os.getpid()})", flush=True)
    asyncio.run(server.serve(sockets=sockets))
    return 0 if server.started else 1


if __name__ == "__main__":
    sys.exit(main())
