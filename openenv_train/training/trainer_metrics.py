"""The trainer's ``/metrics`` (Prometheus), served while a run trains when ``metrics_port`` is set.

Why: when a run slows down, the trainer's figures (episodes, turns, policy calls and their batch
sizes, tokens per second, infra retries, dropped groups, staleness, rollout time) sit next to the
env servers' in one Prometheus, instead of only in ``metrics.jsonl``. The same numbers still go to
``metrics.jsonl``: every record written there is also shown here (``openenv_trainer_log``), and each
rollout batch adds to the counters below. One run per process: ``serve_trainer_metrics`` makes the
run's exporter the active one, and ``record_batch`` is a no-op while none is.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

__all__ = ["TrainerMetrics", "record_batch", "serve_trainer_metrics"]

_NAME = re.compile(r"[^a-zA-Z0-9_]")
#: Log keys shown at most (a bound on the series a run creates).
MAX_LOG_KEYS = 256


class TrainerMetrics:
    """Counters of the rollout batches and the latest value of every logged number."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.lock = threading.Lock()  # the scrape thread reads what the trainer writes
        self.counts: dict[str, float] = {}
        self.gauges: dict[str, float] = {}
        self.logged: dict[tuple[str, str], float] = {}
        self.step = 0
        self.server: Any = None
        self.port: int | None = None
        self.registry.register(self)

    def batch(self, batch: Any, seconds: float, sync_seconds: float = 0.0) -> None:
        """One rollout batch (a ``RolloutBatch``) that took ``seconds`` to produce, after
        ``sync_seconds`` handing the trainer's weights to the producer (overlap, a fleet)."""
        records = batch.records
        m = batch.metrics
        tokens = sum(r.metrics.get("model_tokens", 0) for r in records)
        with self.lock:
            c = self.counts
            for key, value in (
                ("batches", 1),
                ("episodes", len(records)),
                ("turns", sum(r.num_turns for r in records)),
                ("model_tokens", tokens),
                ("policy_calls", m.get("policy_calls", 0)),
                ("infra_errors", m.get("infra_errors", 0)),
                ("groups_dropped", len(batch.dropped_groups)),
                ("rollout_seconds", seconds),
                ("weight_sync_seconds", sync_seconds),
            ):
                c[key] = c.get(key, 0) + float(value or 0)
            g = self.gauges
            g["mean_batch_size"] = float(m.get("mean_batch_size", 0.0) or 0.0)
            g["tokens_per_second"] = tokens / seconds if seconds > 0 else 0.0
            g["last_weight_sync_seconds"] = sync_seconds
            for key in ("policy_version", "staleness", "stale_batches_dropped", "reward_mean"):
                if isinstance(m.get(key), (int, float)):
                    g[key] = float(m[key])

    def log(self, kind: str, step: int, row: dict[str, Any]) -> None:
        """A record written to ``metrics.jsonl``: its numbers become ``openenv_trainer_log``."""
        with self.lock:
            self.step = max(self.step, int(step or 0))
            for key, value in row.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                name = (kind, _NAME.sub("_", str(key))[:100])
                if name in self.logged or len(self.logged) < MAX_LOG_KEYS:
                    self.logged[name] = float(value)

    def collect(self) -> Iterator[Metric]:
        with self.lock:
            counts, gauges, logged = dict(self.counts), dict(self.gauges), dict(self.logged)
            step = self.step
        for key, value in counts.items():
            family = CounterMetricFamily(
                f"openenv_trainer_{key}", f"Rollout {key.replace('_', ' ')} so far"
            )
            family.add_metric([], value)
            yield family
        for key, value in gauges.items():
            family = GaugeMetricFamily(
                f"openenv_trainer_{key}", f"The latest rollout batch's {key.replace('_', ' ')}"
            )
            family.add_metric([], value)
            yield family
        yield GaugeMetricFamily("openenv_trainer_step", "The trainer's global step", value=step)
        family = GaugeMetricFamily(
            "openenv_trainer_log",
            "The latest value of each number written to metrics.jsonl, by record kind and key",
            labels=["kind", "key"],
        )
        for (kind, key), value in logged.items():
            family.add_metric([kind, key], value)
        yield family

    def exposition(self) -> bytes:
        """The text a scrape gets."""
        return generate_latest(self.registry)

    def close(self) -> None:
        global _ACTIVE
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        if _ACTIVE is self:
            _ACTIVE = None


_ACTIVE: TrainerMetrics | None = None


def serve_trainer_metrics(port: int, host: str = "127.0.0.1") -> TrainerMetrics:
    """Serve a new ``TrainerMetrics`` at ``http://host:port/metrics`` (port 0: a free one, in
    ``.port``) and make it the active one; ``close()`` stops it."""
    global _ACTIVE
    metrics = TrainerMetrics()
    try:
        server, _thread = start_http_server(port, addr=host, registry=metrics.registry)
    except OSError as exc:
        raise OSError(
            f"metrics_port: cannot serve the trainer's /metrics on {host}:{port} ({exc}); pick a "
            "free port, 0 for any, or leave metrics_port unset"
        ) from exc
    metrics.server, metrics.port = server, server.server_port
    _ACTIVE = metrics
    return metrics


def record_batch(batch: Any, seconds: float, sync_seconds: float = 0.0) -> None:
    """Count a rollout batch on the active exporter (none: nothing happens)."""
    active = _ACTIVE
    if active is not None:
        active.batch(batch, seconds, sync_seconds)


def record_log(kind: str, step: int, row: dict[str, Any]) -> None:
    """Show a ``metrics.jsonl`` record on the active exporter (none: nothing happens)."""
    active = _ACTIVE
    if active is not None:
        active.log(kind, step, row)
