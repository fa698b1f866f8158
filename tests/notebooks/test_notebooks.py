"""Every tutorial notebook runs top to bottom in a real Jupyter kernel, as a reader would run it.

A real kernel (nbclient + ipykernel) matters: it already runs an event loop, so code that calls
``asyncio.run`` fails there while it passes under a plain ``exec``. Stored outputs stay small so
the notebooks diff and load quickly.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
MAX_STORED_OUTPUT_BYTES = 20_000  # per notebook, all cells together


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, "notebooks/ has no tutorials"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_stored_outputs_are_small(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    stored = sum(
        len(nbformat.writes(nbformat.from_dict({"o": c.get("outputs", [])}))) for c in nb.cells
    )
    assert stored <= MAX_STORED_OUTPUT_BYTES, (
        f"{path.name} stores {stored} bytes of outputs; clear them "
        f"(jupyter nbconvert --clear-output --inplace {path.name})"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_a_real_kernel(path: Path, tmp_path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    env_bin = str(Path(sys.executable).parent)
    os.environ["PATH"] = env_bin + os.pathsep + os.environ.get("PATH", "")  # the kernel's tools
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},  # runs from a scratch folder
    )
    client.execute()  # raises CellExecutionError with the cell's traceback on failure
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
