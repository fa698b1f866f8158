"""Fixtures for the agents-in-envs tests: real uvicorn servers on loopback, stopped after use
(``serve_app``, shared with the server tests through ``tests/support/server_helpers.py``)."""

from __future__ import annotations

from server_helpers import serve_app  # noqa: F401  (the fixture, offered to these tests)
