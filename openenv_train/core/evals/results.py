"""``EvalConfig`` and ``EvalResult``: what an evaluation ran with, and what it scored.

Plain pydantic models (OpenEnv 0.10's fields), so a result is one JSON document:
``result.model_dump_json()`` writes it and ``EvalResult.model_validate_json(text)`` reads it
back equal. Unknown fields are refused and assignments are validated, so a typo cannot slip a
parameter past the record.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class EvalConfig(BaseModel):
    """Everything that decides an evaluation's scores: compare two configs to know whether two
    results are comparable."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    harness_name: str = Field(description="the harness that ran the eval (EvalHarness.name)")
    harness_version: str = Field(description="the version of that harness")
    library_versions: dict[str, str] = Field(
        description="distribution name -> version of the libraries the eval used, "
        "e.g. installed_versions('torch', 'transformers')"
    )
    dataset: str = Field(description="what was evaluated on: a dataset, task or env name(s)")
    eval_parameters: dict[str, Any] = Field(
        description="the harness's parameters (sampling, seeds, limits...); see the harness"
    )


class EvalResult(BaseModel):
    """The scores of one evaluation with the config that produced them."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    config: EvalConfig = Field(description="the config the eval ran with")
    scores: dict[str, Any] = Field(description="metric name -> value (numbers or nested dicts)")


def installed_versions(*distributions: str) -> dict[str, str]:
    """``{name: version}`` of the named installed distributions (for
    ``EvalConfig.library_versions``); a name that is not installed is left out."""
    out = {}
    for name in distributions:
        try:
            out[name] = metadata.version(name)  # looked up at call time: tests may patch it
        except metadata.PackageNotFoundError:
            continue
    return out
