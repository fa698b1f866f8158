"""Reading a Dockerfile for a builder that is not BuildKit (Daytona builds images from a
Dockerfile's text): drop BuildKit ``--mount`` flags, find the command the image serves, and
check that every ``COPY`` source is inside the build context before anything is uploaded.

Text in, text out; the one file read is in :func:`read_dockerfile`.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

_RUN = re.compile(r"^(\s*RUN\s+)(.*)$", re.IGNORECASE)
_MOUNT = re.compile(r"^\s*--mount=\S+\s*")
_INSTRUCTION = re.compile(r"^\s*([A-Za-z]+)(?:\s+(.*))?$", re.DOTALL)


@dataclass(frozen=True)
class DockerfileImage:
    """A Dockerfile ready for a non-BuildKit builder: its text without ``--mount`` flags, the
    folder its ``COPY`` sources are read from, and the command its last ``CMD`` runs."""

    path: Path
    context_dir: Path
    content: str
    server_cmd: str | None


def _drop_mounts(text: str) -> tuple[str, bool]:
    dropped = False
    while (m := _MOUNT.match(text)) is not None:
        text, dropped = text[m.end() :], True
    return text, dropped


def strip_buildkit_mounts(content: str) -> str:
    """``content`` with the leading ``--mount=...`` flags of every ``RUN`` removed (on its own
    line or on continuation lines); every other line is kept as it was."""
    out: list[str] = []
    in_flags = False  # still before the command of a RUN, where flags may follow
    for line in content.split("\n"):
        run = _RUN.match(line)
        if run is None and not in_flags:
            out.append(line)
            continue
        head, rest = run.groups() if run is not None else ("", line)
        kept, dropped = _drop_mounts(rest)
        only_flags = kept.strip() in ("", "\\")
        continues = rest.rstrip().endswith("\\")
        if run is not None:
            out.append(head.rstrip() + " \\" if only_flags and continues else head + kept)
        elif not dropped:
            out.append(line)
        elif not only_flags:
            out.append(line[: len(line) - len(rest)] + kept)
        in_flags = only_flags and continues
    return "\n".join(out)


def instructions(content: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) per instruction: continuation lines joined, comment lines dropped."""
    result: list[tuple[str, str]] = []
    pending = ""
    for line in content.splitlines():
        if line.strip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        logical, pending = pending + line, ""
        m = _INSTRUCTION.match(logical)
        if m is not None:
            result.append((m.group(1).upper(), (m.group(2) or "").strip()))
    return result


def server_command(content: str) -> str | None:
    """The shell command of the Dockerfile's last ``CMD`` (exec form joined with shell quoting),
    or None when it has none. A ``CMD`` inside ``HEALTHCHECK`` is not the image's command."""
    last: str | None = None
    for keyword, args in instructions(content):
        if keyword != "CMD" or not args:
            continue
        last = args
        if args.startswith("["):
            try:
                argv = json.loads(args)
            except ValueError:
                continue
            if isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv):
                last = shlex.join(argv)
    return last


def copy_sources(content: str) -> list[str]:
    """The sources of every ``COPY`` that reads the build context (not ``--from=``)."""
    sources: list[str] = []
    for keyword, args in instructions(content):
        if keyword != "COPY":
            continue
        if args.startswith("["):
            try:
                words = [str(w) for w in json.loads(args)]
            except ValueError:
                continue
        else:
            words = args.split()
        flags = [w for w in words if w.startswith("--")]
        if any(f.startswith("--from=") for f in flags):
            continue
        paths = [w for w in words if not w.startswith("--")]
        sources += paths[:-1]
    return sources


def default_context(dockerfile: Path) -> Path:
    """The folder a Dockerfile is built from: its own, or its parent's for OpenEnv's
    ``<env>/server/Dockerfile`` layout."""
    folder = dockerfile.parent
    return folder.parent if folder.name == "server" else folder


def read_dockerfile(path: str | Path, context_dir: str | Path | None = None) -> DockerfileImage:
    """Read and check ``path``: it exists, ``context_dir`` exists, every ``COPY`` source is
    inside the context and there. Errors name the file and the fix."""
    src = Path(path).resolve()
    if not src.is_file():
        raise FileNotFoundError(f"Dockerfile not found: {path}")
    if context_dir is not None and not Path(context_dir).is_dir():
        raise ValueError(
            f"context_dir does not exist: {context_dir}; give the build context folder"
        )
    ctx = Path(context_dir) if context_dir is not None else default_context(src)
    original = src.read_text()
    root = ctx.resolve()
    for source in copy_sources(original):
        target = (root / source.lstrip("/")).resolve()  # "/x" is the context's x, as in docker
        if not target.is_relative_to(root):
            raise ValueError(
                f"{src}: COPY source {source!r} is outside context_dir {ctx}; a build reads "
                "only files inside its context (move the file in, or pass context_dir=)"
            )
        if not target.exists() and not any(root.glob(source.lstrip("/"))):
            raise ValueError(
                f"{src}: COPY source {source!r} not found under context_dir {ctx}; this "
                "Dockerfile may expect another build context (e.g. the repository root): "
                "pass context_dir= explicitly"
            )
    return DockerfileImage(src, ctx, strip_buildkit_mounts(original), server_command(original))
