"""The one ``GET /health`` probe (env servers, containers, Ray fleets, the pool, the CLI's
validate, the vLLM server, the policy endpoint) and the start / context-manager lifecycle every
provider shares (``Provider``)."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from .signals import raise_on_stop_signals


def probe(
    base_url: str, timeout: float = 2.0, token: str | None = None
) -> tuple[int | None, Any, str]:
    """``GET {base_url}/health`` once: (HTTP status or None, the JSON body or None, what happened
    in words). ``token`` is sent as ``Authorization: Bearer`` (servers beyond loopback)."""
    return _get_health(base_url, timeout, token)[:3]


def health_state(base_url: str, timeout: float = 2.0, token: str | None = None) -> str:
    """``ok`` (``/health`` answered 200), ``refused`` (nothing listens at that address: the
    server is gone) or ``failed`` (no answer within ``timeout``, or not 200: perhaps only slow)."""
    status, _, _, error = _get_health(base_url, timeout, token)
    if status == 200:
        return "ok"
    return "refused" if isinstance(error, ConnectionRefusedError) else "failed"


def _get_health(
    base_url: str, timeout: float, token: str | None
) -> tuple[int | None, Any, str, Exception | None]:
    parts = urlsplit(base_url)
    https = parts.scheme == "https"
    connection = http.client.HTTPSConnection if https else http.client.HTTPConnection
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        port = parts.port or (443 if https else 80)
        conn = connection(parts.hostname or "", port, timeout=timeout)
        try:
            conn.request("GET", parts.path.rstrip("/") + "/health", headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
    except (OSError, ValueError, http.client.HTTPException) as e:
        return None, None, f"GET /health failed: {e}", e
    try:
        body = json.loads(raw or b"null")
    except ValueError:
        body = None
    return resp.status, body, f"GET /health answered HTTP {resp.status}", None


def healthy(base_url: str, timeout: float = 2.0, token: str | None = None) -> bool:
    """``GET /health`` answers 200 within ``timeout`` seconds."""
    return probe(base_url, timeout, token)[0] == 200


def health(base_url: str, timeout: float = 2.0) -> dict[str, Any] | None:
    """The ``/health`` answer of a server, or None if it does not answer 200 with JSON."""
    status, body, _ = probe(base_url, timeout)
    return body if status == 200 and isinstance(body, dict) else None


def wait_healthy(
    base_url: str,
    timeout: float,
    exited: Callable[[], bool],
    fail: Callable[[str], Any],
    check_every: float = 0.0,
    probe_timeout: float = 2.0,
) -> None:
    """Poll until ``/health`` answers 200; ``fail(why)`` (which raises, naming the fix) when
    ``exited()`` or after ``timeout`` seconds.

    ``exited()`` is asked at most every ``check_every`` seconds (it may cost an engine request).
    """
    deadline = time.monotonic() + timeout
    delay, checked = 0.02, float("-inf")
    while True:
        status, _, last = probe(base_url, probe_timeout)
        if status == 200:
            return
        now = time.monotonic()
        if now - checked >= check_every:
            checked = now
            if exited():
                fail("exited before it became healthy")
        if now > deadline:
            fail(f"did not become healthy within startup_timeout={timeout}s ({last})")
        time.sleep(delay)
        delay = min(delay * 1.5, 0.25)


class Provider:
    """The lifecycle every provider shares: ``start()`` = spawn + wait for ``/health``; ``with``.

    Subclasses implement ``_spawn()`` (sets ``base_url``), ``wait_healthy()``, ``stop()`` and
    ``running``; ``start_group`` calls the two steps itself to start many in parallel.
    """

    base_url: str | None = None

    @property
    def running(self) -> bool:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def _spawn(self) -> None:  # pragma: no cover
        raise NotImplementedError

    def wait_healthy(self) -> None:  # pragma: no cover
        raise NotImplementedError

    def stop(self) -> None:  # pragma: no cover
        raise NotImplementedError

    def start(self) -> str:
        """Start the server and wait until ``/health`` answers; returns the base URL."""
        if self.base_url is not None and self.running:
            return self.base_url
        raise_on_stop_signals()  # SIGTERM/SIGHUP then stop what is started here (a `with` exit)
        self._spawn()
        self.wait_healthy()
        assert self.base_url is not None
        return self.base_url

    def __enter__(self) -> Any:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
