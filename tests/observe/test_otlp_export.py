"""OTLP export when configured, nothing when not: a child process (one tracer provider per
process) sets tracing up from the ``OTEL_*`` variables and sends its spans to a small OTLP/HTTP
collector of the test's own."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")

CHILD = """
from opentelemetry import trace
from openenv_train.server.spans import setup_tracing, tracing_on
from openenv_train.rollout.episode_spans import rollout_span
print(setup_tracing("otlp-test"), tracing_on(), flush=True)
with rollout_span("episode"):
    pass
if tracing_on():
    trace.get_tracer_provider().shutdown()  # flushes the batch processor
"""


def _child(env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_spans_go_to_the_configured_otlp_endpoint_and_nowhere_without_one() -> None:
    received: list[tuple[str, str, bytes]] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, self.headers["Content-Type"], body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        assert _child(base) == "False False"
        assert not received
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        assert _child(dict(base, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint)) == "True True"
    finally:
        server.shutdown()
        server.server_close()
    assert [(path, kind) for path, kind, _ in received] == [
        ("/v1/traces", "application/x-protobuf")
    ]
    assert b"episode" in received[0][2] and b"otlp-test" in received[0][2]
