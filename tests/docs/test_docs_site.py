"""The documentation site builds strict, its generated pages match the code, the README stays a
short front door, and the changelog's latest release is the version the package reports."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from docs_support import ROOT, load_script

README_MAX_LINES = 250


def test_the_site_builds_strict(tmp_path: Path) -> None:
    """A broken link, anchor, API reference or a page missing from the nav fails the build."""
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=600,
    )
    warnings = [line for line in out.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert out.returncode == 0, "\n".join(warnings) or out.stderr[-3000:]
    api = (tmp_path / "reference" / "api" / "index.html").read_text()
    assert "start_servers" in api and "make_rollout_func" in api  # mkdocstrings rendered them


def test_the_readme_is_a_short_front_door() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move detail to docs/"
    )


def test_generated_pages_match_the_code() -> None:
    docs_gen = load_script("docs_gen")
    stale = [
        str(path.relative_to(ROOT))
        for path, text in docs_gen.generated().items()
        if not path.is_file() or path.read_text() != text
    ]
    assert not stale, f"out of date: {stale}; run make docs-gen"


def test_the_generator_check_fails_on_a_stale_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs_gen = load_script("docs_gen")
    page = tmp_path / "cli.md"
    page.write_text(docs_gen.cli_page().replace("--max-steps", "--max-step"))
    monkeypatch.setattr(docs_gen, "CLI_PAGE", page)
    monkeypatch.setattr(docs_gen, "ARCHITECTURE_SVG", tmp_path / "architecture.svg")
    assert docs_gen.main(["--check"]) == 1
    assert "--max-step " in page.read_text()  # --check writes nothing
    assert docs_gen.main([]) == 0 and docs_gen.main(["--check"]) == 0


def test_the_cli_page_lists_every_command_and_flag() -> None:
    import argparse

    from openenv_train.cli.main import build_parser

    text = (ROOT / "docs" / "reference" / "cli.md").read_text()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, child in sub.choices.items():
        assert f"## `openenv-train {name}`" in text
        for action in child._actions:
            if isinstance(action, argparse._HelpAction):
                continue  # every command has -h; the page says so once
            for flag in action.option_strings:
                assert f"`{flag}`" in text, f"openenv-train {name} {flag}"


def test_the_picture_draws_the_documented_layers() -> None:
    docs_gen = load_script("docs_gen")
    svg = (ROOT / "docs" / "assets" / "architecture.svg").read_text()
    for layer in docs_gen.import_layers():
        for package in layer:
            assert f">{package}/<" in svg or f">{package}<" in svg


def latest_release(changelog: str) -> str:
    found = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", changelog, flags=re.M)
    assert found, "CHANGELOG.md: no release heading such as '## [0.1.0] - 2026-11-30'"
    return found[0]


def test_version_is_the_changelogs_latest_release() -> None:
    from openenv_train import __version__

    text = (ROOT / "CHANGELOG.md").read_text()
    assert text.index("## [Unreleased]") < text.index(f"## [{latest_release(text)}]")
    assert __version__ == latest_release(text)
    pyproject = (ROOT / "pyproject.toml").read_text()  # the version's one place is __version__
    assert 'dynamic = ["version"]' in pyproject
    assert 'version = { attr = "openenv_train.__version__" }' in pyproject
    out = subprocess.run(
        [sys.executable, "-m", "openenv_train", "--version"], capture_output=True, text=True
    )
    assert out.stdout.split() == ["openenv-train", latest_release(text)]


def test_latest_release_reads_the_first_release_heading() -> None:
    assert latest_release("## [Unreleased]\n## [0.2.0] - x\n## [0.1.0] - y\n") == "0.2.0"


def test_the_errors_page_lists_every_code_and_error() -> None:
    from openenv_train.core import errors

    page = (ROOT / "docs" / "reference" / "errors.md").read_text()
    missing = [code.value for code in errors.ErrorCode if f"`{code.value}`" not in page]
    classes = [
        name
        for name, obj in vars(errors).items()
        if isinstance(obj, type)
        and issubclass(obj, Exception)
        and obj.__module__ == errors.__name__
    ]
    missing += [n for n in classes if f"`{n}`" not in page and n != "OpenEnvTrainError"]
    assert not missing, f"docs/reference/errors.md does not describe {missing}"


def broken_links(page: Path) -> list[str]:
    """Relative links of a Markdown file outside the site (README, CHANGELOG) that lead nowhere."""
    from markdown.extensions.toc import slugify

    bad = []
    for target, anchor in re.findall(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)", page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path = (page.parent / target).resolve()
        if not path.exists():
            bad.append(target)
        elif anchor and path.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", path.read_text(), flags=re.M)
            if anchor not in {slugify(h.replace("`", ""), "-") for h in headings}:
                bad.append(f"{target}#{anchor}")
    return bad


@pytest.mark.parametrize("name", ["README.md", "CHANGELOG.md"])
def test_links_outside_the_site_lead_somewhere(name: str) -> None:
    assert not broken_links(ROOT / name), f"{name}: broken links"


def test_the_link_check_catches_a_missing_page_and_anchor(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A page\n\n## Some `code` here\n")
    page = tmp_path / "index.md"
    page.write_text("[ok](a.md#some-code-here) [x](b.md) [y](a.md#nope) [w](https://x.org/b.md)")
    assert broken_links(page) == ["b.md", "a.md#nope"]
