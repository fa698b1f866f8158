"""The Hypothesis profiles of every fuzzer folder (tests/fuzz, tests/security): ``ci`` for the
test run, ``long`` for ``make fuzz``; each folder's conftest loads them, so it also runs alone."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=False,
    print_blob=True,
)


def register_profiles() -> None:
    """Register ``ci`` (60 examples a target) and ``long`` (1,000), and load ``ci``."""
    settings.register_profile("ci", max_examples=60, **_COMMON)
    settings.register_profile("long", max_examples=1000, **_COMMON)
    settings.load_profile("ci")
