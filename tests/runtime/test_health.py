"""The one ``/health`` probe: status and body, bearer tokens, a path prefix, and waiting with the
caller's own error (each caller names its fix)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from openenv_train.runtime.health import health, healthy, probe, wait_healthy


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path not in ("/health", "/v1/health"):
            self.send_response(404)
            self.end_headers()
            return
        ok = self.headers.get("Authorization") == "Bearer s3cret"
        body = json.dumps({"status": "ok", "max_sessions": 4} if ok else {"detail": "token"})
        self.send_response(200 if ok else 401)
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_probe_sends_the_token_and_keeps_a_path_prefix(url: str) -> None:
    assert probe(url, token="s3cret")[:2] == (200, {"status": "ok", "max_sessions": 4})
    assert healthy(url + "/v1/", token="s3cret")
    status, body, why = probe(url)
    assert (status, body, why) == (401, {"detail": "token"}, "GET /health answered HTTP 401")
    assert not healthy(url) and health(url) is None


def test_nothing_listening_is_unhealthy_with_the_reason() -> None:
    status, body, why = probe("http://127.0.0.1:9", timeout=0.5)
    assert status is None and body is None and why.startswith("GET /health failed:")


def test_wait_healthy_raises_the_callers_error_on_exit_and_on_timeout(url: str) -> None:
    def fail(why: str) -> None:
        raise RuntimeError(f"my server {why}; start it with --fix")

    with pytest.raises(RuntimeError, match="my server exited before it became healthy"):
        wait_healthy(url, 5.0, lambda: True, fail)
    with pytest.raises(
        RuntimeError, match=r"within startup_timeout=0.1s \(GET /health answered HTTP 401\)"
    ):
        wait_healthy(url, 0.1, lambda: False, fail)
