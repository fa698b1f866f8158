"""A loopback port on the host that leads into a container with no network at all.

A container run with the engine's ``--network none`` has only its own loopback: no route to
the host, to other containers or out. An engine cannot publish a port of such a container, and
an "internal" engine network still routes to every address of the host (its bridge gateway).
So the host end is made here instead: a listener on ``127.0.0.1`` whose connections are
relayed to ``127.0.0.1:PORT`` inside the container's network namespace. The inside sockets are
made by one thread that entered that namespace (``setns``, which acts on the calling thread
only), so nothing inside the container ever gets a way out. Entering another process's network
namespace needs root (rootful Docker or Podman).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import os
import socket
from contextlib import suppress

from ..client.sync import LoopThread
from .errors import NetnsPortError as NetnsPortError

_CLONE_NEWNET = 0x40000000
_CHUNK = 256 * 1024


def _enter(ns_fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(ns_fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise NetnsPortError(
            err, f"setns into the container's network namespace: {os.strerror(err)}"
        )


class NetnsPort:
    """``127.0.0.1:host_port`` on the host -> ``127.0.0.1:target_port`` in the namespace of
    process ``pid``. ``start()`` returns the host port; ``stop()`` closes every relay."""

    def __init__(self, pid: int, target_port: int, host_port: int | None = None) -> None:
        self.pid, self.target_port, self.host_port = pid, target_port, host_port or 0
        self._loop: LoopThread | None = None  # the relays' event loop, from start() on
        self._server: asyncio.base_events.Server | None = None
        self._inside: concurrent.futures.ThreadPoolExecutor | None = None
        self._ns_fd: int | None = None

    def start(self) -> int:
        try:
            self._ns_fd = os.open(f"/proc/{self.pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as e:
            raise NetnsPortError(
                e.errno, f"cannot open the network namespace of pid {self.pid}: {e}"
            ) from e
        probe = concurrent.futures.ThreadPoolExecutor(
            1, initializer=_enter, initargs=(self._ns_fd,)
        )
        self._inside = probe
        try:
            probe.submit(lambda: None).result()  # entering fails here, not on the first client
        except Exception as e:
            self.stop()
            raise NetnsPortError(
                1,
                f"cannot enter the container's network namespace ({e}); network='none' needs a "
                "rootful engine and this process running as root",
            ) from e
        self._loop = LoopThread("openenv-train-netns-port")
        self.host_port = self._loop.run(self._listen(), timeout=10)
        return self.host_port

    async def _close_listener(self) -> None:
        if self._server is not None:
            self._server.close()

    async def _listen(self) -> int:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.host_port)
        return self._server.sockets[0].getsockname()[1]

    def _connect_inside(self) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # made in the namespace
        try:
            sock.settimeout(5)
            sock.connect(("127.0.0.1", self.target_port))
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except BaseException:
            sock.close()
            raise
        return sock

    async def _relay(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            sock = await asyncio.get_running_loop().run_in_executor(
                self._inside, self._connect_inside
            )
        except (OSError, RuntimeError):
            client_w.close()
            return
        server_r, server_w = await asyncio.open_connection(sock=sock)
        with suppress(OSError):
            client_w.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            await asyncio.gather(_pipe(client_r, server_w), _pipe(server_r, client_w))
        finally:
            server_w.close()
            client_w.close()

    def stop(self) -> None:
        """Close the listener and every relay; idempotent."""
        loop, self._loop = self._loop, None
        if loop is not None:
            with suppress(Exception):
                loop.run(self._close_listener(), timeout=5)
            loop.close()  # cancels the relays still running, then stops the loop
        if self._inside is not None:
            self._inside.shutdown(wait=False)
            self._inside = None
        if self._ns_fd is not None:
            os.close(self._ns_fd)
            self._ns_fd = None


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while data := await src.read(_CHUNK):
            dst.write(data)
            await dst.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        with suppress(OSError, RuntimeError):
            if dst.can_write_eof():
                dst.write_eof()
            else:
                dst.close()
