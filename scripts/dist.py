"""Build the sdist and wheel of openenv-train and of every env package under envs/, then check
them with twine (``make dist``; tests/packaging builds and installs them the same way).

    python scripts/dist.py [--outdir dist] [--isolation]

Each package is built by ``python -m build``: the sdist first, then the wheel from that sdist,
so a file missing from the sdist is missing from the wheel too. The builds run in a copy of the
files git sees (tracked and new, not ignored): setuptools would otherwise keep listing whatever
a stale ``*.egg-info/SOURCES.txt`` of an earlier build names, and the checkout stays untouched.
Without ``--isolation`` the build uses this environment's setuptools (no download: works
offline); with it, ``build`` makes fresh build environments from the package index (what a
release upload should use).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def project_folders(root: Path = ROOT) -> list[Path]:
    """The library first, then every env package (``envs/*/pyproject.toml``), sorted."""
    return [root, *sorted(p.parent for p in root.glob("envs/*/pyproject.toml"))]


def clean_copy(dest: Path) -> Path:
    """The files git sees in this checkout (links kept as links) copied under ``dest``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (os.fsdecode(n) for n in listed)):
        src, dst = ROOT / name, dest / name
        if not os.path.lexists(src):  # deleted here, not yet in a commit
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            dst.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, dst)
    return dest


def stale_build_requirements(
    folders: list[Path], version_of: Callable[[str], str | None] | None = None
) -> list[str]:
    """Each ``[build-system] requires`` of ``folders`` that this environment does not meet, as
    ``"setuptools 68.0 (needs setuptools>=77)"``; ``version_of(name)`` is the installed version
    (None: not installed), this environment's by default."""
    from importlib import metadata

    from packaging.requirements import Requirement

    try:
        import tomllib
    except ImportError:  # Python 3.10: the backport setuptools itself depends on
        import tomli as tomllib  # type: ignore[no-redef]

    def installed(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    found = version_of or installed
    out: list[str] = []
    for folder in folders:
        system = tomllib.loads((folder / "pyproject.toml").read_text()).get("build-system", {})
        for text in system.get("requires", []):
            req = Requirement(text)
            have = found(req.name)
            line = f"{req.name} {have or 'not installed'} (needs {req})"
            if (have is None or not req.specifier.contains(have, prereleases=True)) and (
                line not in out
            ):
                out.append(line)
    return out


def build(outdir: Path, *, isolation: bool = False) -> list[Path]:
    """Build every project folder into ``outdir`` (all at once: each build mostly waits on
    its own subprocesses); the files built, sorted. Without isolation this environment's build
    tools must meet the packages' ``[build-system] requires`` (checked first: an old
    setuptools otherwise fails deep in the license field)."""
    if not isolation:
        stale = stale_build_requirements(project_folders())
        if stale:
            raise RuntimeError(
                f"this environment's build tools are too old or missing: {'; '.join(stale)}. "
                "Upgrade them (pip install -U 'setuptools>=77') or build with --isolation"
            )
    outdir = outdir.resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    # without isolation the requirements were checked above, once: build's own check would run
    # two more backend processes per package (half of all the build's processes)
    flag = [] if isolation else ["--no-isolation", "--skip-dependency-check"]
    with tempfile.TemporaryDirectory(prefix="openenv-train-dist-") as tmp:
        source = clean_copy(Path(tmp))
        running = {
            folder: subprocess.Popen(
                [sys.executable, "-m", "build", *flag, "--outdir", str(outdir), str(folder)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for folder in project_folders(source)
        }
        for folder, proc in running.items():
            log, _ = proc.communicate()
            if proc.returncode:
                raise RuntimeError(f"building {folder.relative_to(source)} failed:\n{log[-4000:]}")
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
    try:
        files = build(Path(args.outdir), isolation=args.isolation)
    except RuntimeError as err:
        print(f"dist: error: {err}", file=sys.stderr)
        return 1
    print(twine_check(files), end="")
    for f in files:
        print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
