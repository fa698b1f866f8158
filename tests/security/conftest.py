"""Hypothesis profiles for the sandbox fuzzer, the same as tests/fuzz's (``ci`` by default; ``make
fuzz`` runs ``long``), so this folder also runs on its own."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=False,
    print_blob=True,
)
settings.register_profile("ci", max_examples=60, **_COMMON)
settings.register_profile("long", max_examples=1000, **_COMMON)
settings.load_profile("ci")
