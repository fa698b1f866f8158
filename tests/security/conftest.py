"""Hypothesis profiles for the sandbox fuzzer, the same as tests/fuzz's (``ci`` by default; ``make
fuzz`` runs ``long``), so this folder also runs on its own."""

from __future__ import annotations

from hypothesis_profiles import register_profiles

register_profiles()
