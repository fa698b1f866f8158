"""The package metadata stays whole as packages and extras are added: the ``envs`` extra names
every env package under envs/, each env package depends on openenv-train, ``all`` names every
extra a user installs, and the recipe entry points live in the package's namespace."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib
from docs_support import ROOT

from openenv_train.catalog import missing_env_packages


def project(folder: Path) -> dict:
    return tomllib.loads((folder / "pyproject.toml").read_text())["project"]


def name_of(requirement: str) -> str:
    return re.split(r"[\s;\[<>=!~]", requirement, maxsplit=1)[0]


#: what a light example env may depend on besides openenv-train (no ecosystem library)
LIGHT_DEPENDENCIES = {"openenv-train", "numpy"}


def test_the_envs_and_ecosystems_extras_name_every_env_package_once() -> None:
    """``envs``: the light example envs; ``ecosystems``: the adapters of other ecosystems (they
    pull reasoning-gym, textarena, verifiers, FastMCP: ~1.9 GB together, issue 36)."""
    envs = {project(p.parent)["name"]: p.parent for p in ROOT.glob("envs/*/pyproject.toml")}
    extras = project(ROOT)["optional-dependencies"]
    light, adapters = set(map(name_of, extras["envs"])), set(map(name_of, extras["ecosystems"]))
    assert light | adapters == set(envs) and not light & adapters, (
        "pyproject.toml: every envs/*/ package goes in exactly one of the `envs` extra (light "
        "example envs) and the `ecosystems` extra (adapters of other ecosystems)"
    )
    for name in light:
        deps = project(envs[name])["dependencies"]
        assert set(map(name_of, deps)) <= LIGHT_DEPENDENCIES and "[" not in " ".join(deps), (
            f"{name} depends on {deps}: a light example env; put it in the `ecosystems` extra"
        )


def _named_extras(text: str) -> set[str]:
    return set(re.findall(r"`(\w+)`", text))


def test_readme_and_getting_started_name_every_extra() -> None:
    """One list of extras (pyproject.toml); both pages name every one of them."""
    extras = set(project(ROOT)["optional-dependencies"]) - {"dev"}
    readme = (ROOT / "README.md").read_text()
    install = readme[readme.index("## Install") :]
    line = install[
        install.index("Other extras:") : install.index("\n\n", install.index("Other extras:"))
    ]
    assert _named_extras(line) | {"train", "envs"} == extras, line
    page = (ROOT / "docs" / "getting-started.md").read_text()
    start = page.index("The extras:")
    sentence = page[start : page.index("\n\n", start)]
    assert _named_extras(sentence) == extras, sentence


def test_each_env_package_depends_on_openenv_train_and_says_what_it_is() -> None:
    for toml in ROOT.glob("envs/*/pyproject.toml"):
        meta = project(toml.parent)
        assert "openenv-train" in map(name_of, meta["dependencies"]), toml
        assert meta["license"] == "BSD-3-Clause" and meta["requires-python"], toml
        assert (toml.parent / meta["readme"]).is_file(), toml


def test_all_names_every_extra_a_user_installs() -> None:
    extras = project(ROOT)["optional-dependencies"]
    (line,) = extras["all"]
    named = set(re.fullmatch(r"openenv-train\[([\w,-]+)\]", line).group(1).split(","))
    assert named == set(extras) - {"all", "dev"}, (
        "pyproject.toml: the `all` extra must name every extra except dev (add the new one)"
    )


def test_recipes_register_in_the_package_namespace() -> None:
    recipes = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][
        "openenv_train.recipes"
    ]
    assert recipes and all(v.startswith("openenv_train.recipes.") for v in recipes.values())
    for name, value in recipes.items():  # the folder of each entry exists in recipes/
        assert (ROOT / "recipes" / value.rsplit(".", 1)[1]).is_dir(), name


def test_missing_env_packages_reads_the_envs_extra(monkeypatch) -> None:
    import importlib.metadata as md

    def not_installed(name: str) -> None:
        raise md.PackageNotFoundError(name)

    requires = ['openenv-train-echo-env; extra == "envs"', 'torch>=2; extra == "train"']
    monkeypatch.setattr(md, "requires", lambda dist: requires)
    monkeypatch.setattr(md, "distribution", not_installed)
    assert missing_env_packages() == ["openenv-train-echo-env"]
    monkeypatch.setattr(md, "distribution", lambda name: object())
    assert missing_env_packages() == []


def test_dist_names_a_setuptools_too_old_for_the_license_field() -> None:
    """``make dist`` without isolation builds with this environment's setuptools; one older than
    ``[build-system] requires`` is named before any build starts (issue 36)."""
    from docs_support import load_script

    dist = load_script("dist")
    folders = dist.project_folders()
    assert dist.stale_build_requirements(folders) == []  # this environment builds
    old = dist.stale_build_requirements(folders, lambda name: "68.0")
    assert old == ["setuptools 68.0 (needs setuptools>=77)"]
    assert dist.stale_build_requirements(folders[:1], lambda name: None) == [
        "setuptools not installed (needs setuptools>=77)"
    ]
