"""Fixtures for the OpenEnv compatibility tests (helpers live in ``tests/support``)."""

from server_helpers import serve_app  # noqa: F401  (the fixture, offered to these tests)
