"""A real Prometheus server for the tests (Debian's ``prometheus`` binary): scrapes given
targets every ``interval``; ``query`` asks its HTTP API.

Skipped where the binary is absent (install it with ``apt-get install -y prometheus``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from ports import free_port


def prometheus_binary() -> str:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail(
            "no prometheus binary: run `sudo bash scripts/prometheus.sh` (Debian's prometheus "
            "package; `make test` runs it as root)",
            pytrace=False,
        )
    return binary


class Prometheus:
    def __init__(self, url: str) -> None:
        self.url = url

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The instant vector ``promql`` evaluates to (a list of {metric, value})."""
        q = urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]["result"]

    def wait_for(
        self, promql: str, ok: Callable[[list[dict[str, Any]]], bool], timeout: float = 30.0
    ) -> list[dict[str, Any]]:
        """Query until ``ok(result)`` holds (a bounded wait for the next scrapes)."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(promql)
            if ok(result):
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"{promql}: {result} after {timeout:g}s")
            time.sleep(0.2)

    def targets_up(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.url}/api/v1/targets", timeout=10) as r:
            return json.load(r)["data"]["activeTargets"]


@contextmanager
def prometheus(
    tmp: Path, targets: list[str], token: str | None = None, interval: str = "250ms"
) -> Iterator[Prometheus]:
    """Run Prometheus scraping ``targets`` (``host:port``) until the block ends."""
    binary = prometheus_binary()
    auth = f"    authorization:\n      credentials: {token}\n" if token else ""
    config = tmp / "prometheus.yml"
    config.write_text(
        "global:\n"
        f"  scrape_interval: {interval}\n"
        f"  evaluation_interval: {interval}\n"
        "scrape_configs:\n"
        "  - job_name: openenv\n"
        f"    scrape_timeout: {interval}\n"
        f"{auth}"
        "    static_configs:\n"
        f"      - targets: {json.dumps(targets)}\n"
    )
    for _attempt in range(3):  # the free port may be taken before Prometheus binds it
        port = free_port()
        log = (tmp / "prometheus.log").open("w")
        proc = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        ready = False
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                    ready = r.status == 200
            except OSError:
                pass
            if ready:
                break
            time.sleep(0.05)
        if ready:
            break
        proc.kill()
        proc.wait(10)
        log.close()
    else:
        raise RuntimeError((tmp / "prometheus.log").read_text()[-2000:])
    try:
        yield Prometheus(url)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()
