"""OpenEnv's ``LocalDockerProvider`` (``openenv.core.containers.runtime``: ``start_container``
/ ``wait_for_ready`` / ``stop_container``) on our hardened ``ContainerProvider``, so OpenEnv code
that makes one keeps working after the import change and gets the hardening: non-root, all
capabilities dropped, a read-only root, limits, the port published on 127.0.0.1 only (OpenEnv
publishes it on every interface)."""

from __future__ import annotations

from typing import Any

from ..runtime.container import ContainerProvider
from ..runtime.health import wait_healthy
from .errors import ContainerNotReadyError as ContainerNotReadyError


class LocalDockerProvider:
    """One container at a time; ``options`` (and ``start_container``'s ``kwargs``) go to
    ``ContainerProvider`` (``engine="podman"``, ``relax=``, ``mem_limit=``...)."""

    def __init__(self, **options: Any) -> None:
        self.options = options
        #: the running ContainerProvider (``.hardening()``, ``.logs()``), or None
        self.server: ContainerProvider | None = None

    def start_container(
        self,
        image: str,
        port: int | None = None,
        env_vars: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> str:
        """Serve ``image`` on 127.0.0.1:``port`` (a free one when None); returns its base URL
        once ``/health`` answers (so ``wait_for_ready`` returns at once)."""
        self.stop_container()
        options = {**self.options, **kwargs}
        server = ContainerProvider(image, env=env_vars, host_port=port, **options)
        self.server = server
        try:
            return server.start()
        except BaseException:
            self.server = None
            raise

    def wait_for_ready(self, base_url: str, timeout_s: float = 30.0) -> None:
        """Poll ``GET /health`` until it answers 200, or raise ``ContainerNotReadyError``."""
        server = self.server

        def exited() -> bool:
            return server is not None and not server.running

        def fail(why: str) -> None:
            logs = server.logs() if server is not None else ""
            raise ContainerNotReadyError(
                f"container at {base_url} is not ready: {why}; last log lines:\n{logs or '<empty>'}"
            )

        wait_healthy(base_url, timeout_s, exited, fail, check_every=0.5)

    def stop_container(self) -> None:
        """Remove the container (verified); a no-op when there is none."""
        server, self.server = self.server, None
        if server is not None:
            server.stop()


__all__ = ["ContainerNotReadyError", "LocalDockerProvider"]
