"""Build the sdist and wheel of openenv-train and of every env package under envs/, then check
them with twine (``make dist``; tests/packaging builds and installs them the same way).

    python scripts/dist.py [--outdir dist] [--isolation]

Each package is built by ``python -m build``: the sdist first, then the wheel from that sdist,
so a file missing from the sdist is missing from the wheel too. Without ``--isolation`` the build
uses this environment's setuptools (no download: works offline); with it, ``build`` makes fresh
build environments from the package index (what a release upload should use).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def project_folders() -> list[Path]:
    """The library first, then every env package (``envs/*/pyproject.toml``), sorted."""
    return [ROOT, *sorted(p.parent for p in ROOT.glob("envs/*/pyproject.toml"))]


def build(outdir: Path, *, isolation: bool = False) -> list[Path]:
    """Build every project folder into ``outdir`` (all at once: each build mostly waits on
    its own subprocesses); the files built, sorted."""
    outdir.mkdir(parents=True, exist_ok=True)
    flag = [] if isolation else ["--no-isolation"]
    running = {
        folder: subprocess.Popen(
            [sys.executable, "-m", "build", *flag, "--outdir", str(outdir), str(folder)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for folder in project_folders()
    }
    for folder, proc in running.items():
        log, _ = proc.communicate()
        if proc.returncode:
            raise RuntimeError(f"building {folder} failed:\n{log[-4000:]}")
    return sorted(p for p in outdir.iterdir() if p.suffix in (".whl", ".gz"))


def twine_check(files: list[Path]) -> str:
    """``twine check --strict``: the metadata PyPI would reject or render badly; its report."""
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, files)],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(f"twine check failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outdir", default=str(ROOT / "dist"), help="where the files go")
    parser.add_argument(
        "--isolation", action="store_true", help="fresh build environments from the index"
    )
    args = parser.parse_args()
    files = build(Path(args.outdir), isolation=args.isolation)
    print(twine_check(files), end="")
    for f in files:
        print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
