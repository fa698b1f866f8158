"""A generated family of Harbor tasks with a small action space, for training a tiny model:
``create_<word>`` asks for an empty file ``/app/<word>``; the tests pass only when that file,
and no other word's, exists. One right call (``write_file`` with the word as the path) among
``len(words)`` paths: a random policy scores ``1 / len(words)``, a learner climbs from there."""

from __future__ import annotations

from pathlib import Path

WORDS = ("apple", "river", "stone", "cloud")

_TOML = """version = "1.0"

[metadata]
category = "generated"

[verifier]
timeout_sec = 30.0

[agent]
timeout_sec = 120.0

[environment]
cpus = 0.5
memory_mb = 128
network_mode = "no-network"
"""

_DOCKERFILE = """ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
RUN mkdir -p /app && chown 10001:10001 /app
WORKDIR /app
USER 10001
"""


def instruction(word: str) -> str:
    return f"create the file {word}"


def write_family(folder: str | Path, words: tuple[str, ...] = WORDS) -> Path:
    """Write one task folder per word under ``folder`` (made); returns ``folder``."""
    folder = Path(folder)
    for word in words:
        others = " ".join(w for w in words if w != word)
        d = folder / f"create_{word}"
        (d / "environment").mkdir(parents=True, exist_ok=True)
        (d / "tests").mkdir(exist_ok=True)
        (d / "solution").mkdir(exist_ok=True)
        (d / "task.toml").write_text(_TOML)
        (d / "instruction.md").write_text(instruction(word) + "\n")
        (d / "environment" / "Dockerfile").write_text(_DOCKERFILE)
        test = (
            "#!/bin/bash\nmkdir -p /logs/verifier\nok=1\n"
            f"[ -f /app/{word} ] || ok=0\n"
            f"for w in {others}; do [ -e /app/$w ] && ok=0; done\n"
            "echo $ok > /logs/verifier/reward.txt\n"
        )
        (d / "tests" / "test.sh").write_text(test)
        (d / "tests" / "test.sh").chmod(0o755)
        (d / "solution" / "solve.sh").write_text(f"#!/bin/bash\ntouch /app/{word}\n")
        (d / "solution" / "solve.sh").chmod(0o755)
    return folder
