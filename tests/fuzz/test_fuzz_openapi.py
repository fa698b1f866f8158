"""Schema-driven fuzzing of every OpenAPI route (schemathesis strategies) against a real server."""

from __future__ import annotations

import pytest
import schemathesis
from fuzz_strategies import ERROR_REPLY_MAX, FuzzServer
from hypothesis import given, settings
from schemathesis.checks import not_a_server_error

pytestmark = pytest.mark.fuzz  # the run-wide --timeout applies (make fuzz raises it)


def test_openapi_routes(fuzz_server: FuzzServer) -> None:
    schema = schemathesis.openapi.from_url(fuzz_server.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    paths = {op.path for op in operations}
    assert {"/reset", "/step", "/state", "/mcp", "/health", "/schema"} <= paths, paths
    for op in operations:

        @settings(database=None)
        @given(case=op.as_strategy())
        def check(case) -> None:
            response = case.call(base_url=fuzz_server.url, timeout=30)
            is_json = "application/json" in str(response.headers.get("content-type"))
            body = response.json() if response.content and is_json else None  # /metrics is text
            execution_error = response.status_code == 500 and (
                isinstance(body, dict) and body["detail"]["code"] == "EXECUTION_ERROR"
            )
            if not execution_error:  # an env that raises is a 500 EXECUTION_ERROR by design
                case.validate_response(response, checks=[not_a_server_error])
            if response.status_code >= 400:
                assert len(response.content) <= ERROR_REPLY_MAX, len(response.content)
            fuzz_server.health()

        check()
