"""The env image recipe every env shares (``envs/*/Dockerfile`` and what ``init`` writes).

Rules a test and ``validate`` check: multi-stage with the virtualenv shipped in exactly one layer
(``COPY --from=build /opt/venv``: copying it twice doubles the image), a non-root ``USER``, a
``HEALTHCHECK``, and ``BASE_IMAGE`` as a build argument (``python:3.11-slim`` by default; any
Debian-like image with ``python3`` and its ``venv`` module works, e.g. one made by debootstrap,
where python lives in /usr/bin rather than /usr/local/bin: only ``python3`` on PATH is used).
The build context is the env folder; ``openenv-train build`` adds the framework it runs with as
``.openenv_train/`` so the image does not need it on PyPI.
"""

from __future__ import annotations

import re

VENV = "/opt/venv"
DEFAULT_BASE = "python:3.11-slim"

TEMPLATE = """\
# The {package} server image. Build it with `openenv-train build {path}` (the build context is
# this folder plus the openenv-train framework in .openenv_train/), or with plain docker once
# openenv-train installs from your package index:
#   docker build -t {package}:latest {path}
# BASE_IMAGE: any Debian-like image with python3 and its venv module (default {default_base}).
ARG BASE_IMAGE={default_base}

FROM ${{BASE_IMAGE}} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv {venv}
WORKDIR /src
# The dependencies first, in a layer of their own: `openenv-train build` stages them as
# .openenv_train/requirements.txt, so a change to the code alone reuses this layer (the
# pattern matches nothing in a plain build, which installs everything in the next step).
COPY pyproject.toml .openenv_train/requirements.txt* ./deps/
RUN if [ -f deps/requirements.txt ]; then {venv}/bin/pip install -r deps/requirements.txt; fi
COPY . .
# pip compiles the bytecode here, once: a container with a read-only root then starts without
# compiling every module again (about a second less to ready).
RUN if [ -f deps/requirements.txt ]; then \\
      {venv}/bin/pip install --no-deps --no-build-isolation ./.openenv_train . ; \\
    else {venv}/bin/pip install .; fi

FROM ${{BASE_IMAGE}}
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PATH={venv}/bin:$PATH OPENENV_MODE=simulation
# The only layer with the virtualenv in it.
COPY --from=build {venv} {venv}
# Non-root and nothing written at run time: works with --read-only and --cap-drop ALL.
USER 10001:10001
WORKDIR /tmp
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \\
    CMD ["python3", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/health', timeout=2)"]
# 0.0.0.0 inside the container only; publish on loopback: docker run -p 127.0.0.1:8000:8000 ...
CMD ["python3", "-m", "openenv_train.runtime.launch", "--app", "{package}.server.app:app", "--host", "0.0.0.0", "--port", "8000"]
"""


def render(package: str, path: str = ".") -> str:
    """The Dockerfile of env package ``package`` (built from folder ``path``)."""
    return TEMPLATE.format(package=package, path=path, venv=VENV, default_base=DEFAULT_BASE)


def check(text: str) -> list[str]:
    """The image rules ``text`` breaks, in words (empty: all kept)."""
    problems = []
    froms = re.findall(r"^FROM\s+(\S+)", text, re.M)
    if len(froms) < 2:
        problems.append("not multi-stage: build the venv in one stage, copy it into a fresh one")
    if not re.search(r"^ARG BASE_IMAGE=", text, re.M) or not all(
        f.startswith("${BASE_IMAGE}") for f in froms
    ):
        problems.append("every FROM must use the BASE_IMAGE build argument (ARG BASE_IMAGE=...)")
    venv_copies = re.findall(rf"^(?:COPY|ADD)\b.*\s{re.escape(VENV)}\s*$", text, re.M)
    if len(venv_copies) != 1:
        problems.append(
            f"the venv {VENV} must be copied in exactly one layer, found {len(venv_copies)}"
        )
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    if not users or users[-1].split(":")[0] in ("0", "root"):
        problems.append("no non-root USER (add USER 10001:10001 to the last stage)")
    if not re.search(r"^HEALTHCHECK\s", text, re.M):
        problems.append("no HEALTHCHECK (probe http://127.0.0.1:8000/health)")
    return problems
