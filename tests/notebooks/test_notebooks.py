"""Every tutorial notebook runs top to bottom in a real Jupyter kernel, as a reader would run it.

A real kernel (nbclient + ipykernel) matters: it already runs an event loop, so code that calls
``asyncio.run`` fails there while it passes under a plain ``exec``. Stored outputs stay small so
the notebooks diff and load quickly.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
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


def _git_status() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_a_real_kernel(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from notebooks/ as a reader would: it leaves the checkout as it was (runs go under the
    ignored runs/) and the temp folder empty (its scratch folders removed at the end)."""
    nb = nbformat.read(path, as_version=4)
    env_bin = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", env_bin + os.pathsep + os.environ.get("PATH", ""))  # kernel tools
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))  # the kernel's temp folder, checked below
    # torch's compile cache is shared by every run on the machine, not a notebook's leftover
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "torchinductor"))
    before = _git_status()
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},  # the folder a reader opens it in
    )
    client.execute()  # raises CellExecutionError with the cell's traceback on failure
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    assert _git_status() == before, f"{path.name} left files in the checkout"
    left = sorted(p.name for p in temp.iterdir())
    assert not left, f"{path.name} left {left} in the temp folder"


def test_the_notebooks_extra_installs_jupyter() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    names = {req.split(">")[0].split("=")[0].strip() for req in extras["notebooks"]}
    assert {"jupyter", "nbclient", "ipykernel"} <= names
