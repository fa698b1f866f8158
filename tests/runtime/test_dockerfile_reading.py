"""Reading a Dockerfile for a non-BuildKit builder (Daytona): mounts dropped, the served command
found, COPY sources checked against the build context."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_train.runtime.dockerfile_reader import (
    copy_sources,
    default_context,
    read_dockerfile,
    server_command,
    strip_buildkit_mounts,
)


def test_mounts_go_and_every_other_line_stays() -> None:
    text = (
        "FROM python:3.11\n"
        "RUN --mount=type=cache,target=/a \\\n"
        "    --mount=type=bind,source=r.txt,target=/r.txt \\\n"
        "    pip install -r /r.txt\n"
        "RUN --mount=type=secret,id=tok echo done\n"
        "RUN apt-get update \\\n    --mount=not-a-flag-here\n"
    )
    out = strip_buildkit_mounts(text)
    assert out.splitlines() == [
        "FROM python:3.11",
        "RUN \\",
        "    pip install -r /r.txt",
        "RUN echo done",
        "RUN apt-get update \\",
        "    --mount=not-a-flag-here",  # an argument of the command, not a flag of RUN
    ]


def test_the_served_command_is_the_last_cmd_and_not_a_healthchecks() -> None:
    text = (
        'CMD ["python3", "-m", "srv", "--name", "two words"]\n'
        "HEALTHCHECK --interval=5s \\\n    CMD curl -f http://127.0.0.1:8000/health\n"
        "# CMD commented out\n"
    )
    assert server_command(text) == "python3 -m srv --name 'two words'"
    assert server_command("FROM x\nRUN true\n") is None


def test_copy_sources_skip_other_stages_and_read_the_json_form() -> None:
    text = 'COPY --from=build /opt /opt\nCOPY --chown=1:1 a b /dst/\nCOPY ["c d", "/dst/"]\n'
    assert copy_sources(text) == ["a", "b", "c d"]


def test_the_context_is_the_dockerfiles_folder_or_the_env_for_server_layouts() -> None:
    assert default_context(Path("/e/echo_env/Dockerfile")) == Path("/e/echo_env")
    assert default_context(Path("/e/echo_env/server/Dockerfile")) == Path("/e/echo_env")


def test_missing_and_escaping_copy_sources_are_named(tmp_path: Path) -> None:
    df = tmp_path / "Dockerfile"
    df.write_text("FROM x\nCOPY /app.py /srv/\n")
    (tmp_path / "app.py").write_text("")
    assert read_dockerfile(df).context_dir == tmp_path  # "/app.py" is the context's app.py
    df.write_text("FROM x\nCOPY gone.py /srv/\n")
    with pytest.raises(ValueError, match="'gone.py' not found under context_dir"):
        read_dockerfile(df)
    df.write_text("FROM x\nCOPY ../../etc/passwd /srv/\n")
    with pytest.raises(ValueError, match="outside context_dir"):
        read_dockerfile(df)
