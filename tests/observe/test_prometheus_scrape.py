"""A real Prometheus (Debian's ``prometheus``) scrapes an env server under load; its queries
return the series users ask for (sessions per server, step rate, p99 step latency, refusals).

Needs the ``prometheus`` binary (``apt-get install -y prometheus``); `make test` installs it as root (scripts/prometheus.sh); a missing one fails with that fix.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from urllib.parse import urlsplit

from observe_envs import TickAction, TickEnv, TickObservation
from prometheus_server import prometheus, prometheus_binary
from server_helpers import ServerThread
from websockets.sync.client import connect

from openenv_train import create_app
from openenv_train.core import State
from openenv_train.rollout.records import RolloutBatch
from openenv_train.training.trainer_metrics import TrainerMetrics

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "assets" / "grafana-openenv-train.json"
PAGE = ROOT / "docs" / "how-to" / "observe.md"

TOKEN = "prometheus-test-token"


def _load(url: str, stop: threading.Event, steps: list[int], me: int) -> None:
    """One session stepping until ``stop``: the load the scrapes see; ``steps[me]`` counts its
    answered steps (a counter per thread: ``+=`` on a shared one can lose counts)."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with connect(url, additional_headers=headers) as ws:
        ws.send(json.dumps({"type": "reset", "data": {}}))
        ws.recv()
        while not stop.is_set():
            ws.send(json.dumps({"type": "step", "data": {"n": 1}}))
            assert json.loads(ws.recv())["type"] == "observation"
            steps[me] += 1


def documented_queries() -> list[str]:
    """Every PromQL expression of the docs page's query block and of the Grafana dashboard."""
    page = PAGE.read_text()
    start = page.index("## PromQL")
    block = page[
        page.index("```text", start) + 7 : page.index("```", page.index("```text", start) + 7)
    ]
    lines = [ln.strip() for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return lines + [t["expr"] for p in panels for t in p["targets"]]


def family_names(text: str) -> set[str]:
    return set(re.findall(r"^# TYPE (\w+) ", text, flags=re.M))


def test_prometheus_scrapes_a_server_under_load(tmp_path: Path) -> None:
    prometheus_binary()  # fail with the fix before starting anything where it is absent
    app = create_app(TickEnv, TickAction, TickObservation, State, token=TOKEN)
    server = ServerThread(app).start()
    stop, steps = threading.Event(), [0, 0]
    workers = [
        threading.Thread(target=_load, args=(server.ws_url, stop, steps, me), daemon=True)
        for me in range(2)
    ]
    try:
        for w in workers:
            w.start()
        target = urlsplit(server.url).netloc
        with prometheus(tmp_path, [target], token=TOKEN) as prom:
            up = prom.wait_for('up{job="openenv"}', lambda r: r and r[0]["value"][1] == "1")
            assert up[0]["metric"]["instance"] == target
            sessions = prom.wait_for(
                'openenv_server_sessions_open{env="TickEnv"}',
                lambda r: r and float(r[0]["value"][1]) == 2,
            )
            assert sessions[0]["metric"]["instance"] == target
            rate = prom.wait_for(
                'sum by (env) (rate(openenv_server_frames_total{type="step",outcome="ok"}[2s]))',
                lambda r: r and float(r[0]["value"][1]) > 0,
            )
            assert rate[0]["metric"] == {"env": "TickEnv"}
            p99 = prom.wait_for(
                "histogram_quantile(0.99, sum by (le, env) "
                '(rate(openenv_server_frame_seconds_bucket{type="step"}[2s])))',
                lambda r: r and 0 < float(r[0]["value"][1]) < 30,
            )
            assert p99[0]["metric"] == {"env": "TickEnv"}
            events = prom.wait_for(
                'sum(openenv_server_env_events_total{event="tick"})',
                lambda r: r and float(r[0]["value"][1]) > 0,
            )
            # the server counts a step before its answer arrives: one in flight per session
            assert float(events[0]["value"][1]) <= sum(steps) + len(workers)
            # what the docs and the dashboard ask is valid PromQL over families that exist
            trainer = TrainerMetrics()
            trainer.batch(RolloutBatch(rows=[], group_size=1, metrics={"policy_calls": 0}), 1.0)
            known = family_names(app.ws_endpoint.metrics.exposition().decode())
            known |= family_names(trainer.exposition().decode())
            for expr in documented_queries():
                prom.query(expr)  # a PromQL error fails here
                for name in re.findall(r"openenv_\w+", expr):
                    base = re.sub(r"_(bucket|sum|count|total)$", "", name)
                    assert base in known or name in known, (name, sorted(known))
    finally:
        stop.set()
        for w in workers:
            w.join(10)
        server.stop()
    assert all(steps)
