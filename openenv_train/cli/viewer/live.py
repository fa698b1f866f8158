"""The viewer's live figures: each given ``/metrics`` endpoint (env servers, the trainer) read by
the viewer's own server and summed up for the page.

Why here and not in the browser: the page never holds a server's token and never fetches from
another origin; a server that stops answering is a row that says so, not a failing page.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

#: Seconds one endpoint may take before its row says it did not answer.
FETCH_TIMEOUT_S = 3.0
#: Bytes of one /metrics reply read at most.
MAX_BYTES = 4 * 1024 * 1024


def metrics_url(url: str) -> str:
    """``url``'s ``/metrics`` (a server's base URL, or the ``/metrics`` URL itself)."""
    url = url.rstrip("/")
    return url if url.endswith("/metrics") else url + "/metrics"


def quantile(buckets: list[tuple[float, float]], q: float) -> float | None:
    """The ``q`` quantile from cumulative ``(le, count)`` buckets, interpolated within its bucket
    as Prometheus' ``histogram_quantile`` does (None: no observations)."""
    buckets = sorted(buckets)
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if math.isinf(le):
                return lower
            if count == below:
                return le
            return lower + (le - lower) * (rank - below) / (count - below)
        lower, below = le, count
    return lower


def summarize(text: str) -> dict[str, Any]:
    """The figures the page shows from one exposition: per env server, and the trainer's."""
    envs: dict[str, dict[str, Any]] = {}
    step_buckets: dict[str, dict[float, float]] = {}
    trainer: dict[str, float] = {}

    def env_row(env: str) -> dict[str, Any]:
        return envs.setdefault(
            env,
            {
                "sessions_open": 0,
                "sessions_max": 0,
                "steps": 0,
                "step_count": 0,
                "step_seconds": 0.0,
                "errors": 0,
                "refused": 0,
                "reaped": 0,
            },
        )

    for family in text_string_to_metric_families(text):
        for s in family.samples:
            name, labels, value = s.name, s.labels, s.value
            if name.startswith("openenv_trainer_") and not labels:
                trainer[name[len("openenv_trainer_") :]] = value
                continue
            env = labels.get("env")
            if env is None or not name.startswith("openenv_server_"):
                continue
            row = env_row(env)
            if name == "openenv_server_sessions_open":
                row["sessions_open"] += value
            elif name == "openenv_server_sessions_max":
                row["sessions_max"] += value
            elif name == "openenv_server_frames_total" and labels.get("type") == "step":
                row["steps"] += value
            elif name == "openenv_server_errors_total":
                row["errors"] += value
            elif name == "openenv_server_sessions_refused_total":
                row["refused"] += value
            elif name == "openenv_server_sessions_reaped_total":
                row["reaped"] += value
            elif labels.get("type") == "step" and name.startswith("openenv_server_frame_seconds"):
                if name.endswith("_count"):
                    row["step_count"] += value
                elif name.endswith("_sum"):
                    row["step_seconds"] += value
                elif name.endswith("_bucket"):
                    le = float(labels["le"])
                    acc = step_buckets.setdefault(env, {})
                    acc[le] = acc.get(le, 0.0) + value
    for env, row in envs.items():
        p99 = quantile(list(step_buckets.get(env, {}).items()), 0.99)
        row["step_p99_ms"] = None if p99 is None else p99 * 1e3
    return {"envs": envs, "trainer": trainer}


async def read_live(urls: list[str], token: str | None) -> list[dict[str, Any]]:
    """One row per URL: its figures, or why it did not answer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def one(client: httpx.AsyncClient, url: str) -> dict[str, Any]:
        try:
            reply = await client.get(metrics_url(url), headers=headers)
            if reply.status_code != 200:
                return {"url": url, "error": f"HTTP {reply.status_code}"}
            if len(reply.content) > MAX_BYTES:
                return {"url": url, "error": f"/metrics is over {MAX_BYTES} bytes"}
            return {"url": url, **summarize(reply.text)}
        except (httpx.HTTPError, ValueError) as exc:
            return {"url": url, "error": f"{type(exc).__name__}: {exc}"[:300]}

    async with httpx.AsyncClient(timeout=FETCH_TIMEOUT_S, trust_env=False) as client:
        return list(await asyncio.gather(*(one(client, u) for u in urls)))
