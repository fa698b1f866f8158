"""Every fenced block of the README, the changelog and the docs is executed or checked.

The env quick starts and the TRL tutorial run as written (test_examples.py,
test_trl_tutorial.py; the Ray and own-env tutorials: tests/ray, tests/recipes). Every other block
is checked here against the code: Python compiles and every name it imports exists; each shell
line is a real command (a make target of the Makefile, an ``openenv-train`` subcommand with flags
it has, a script or config that exists); YAML parses and every key is a key of a recipe config;
the architecture tree names exactly the packages there are.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import re
import shlex
from functools import cache

import pytest
import yaml
from docs_support import ROOT, doc_pages, fenced_blocks

SHELLS = {"bash", "sh", "shell"}
LANGUAGES = {"python", *SHELLS, "yaml", "toml", "json", "text", "console", "javascript"}
#: modules a page writes itself before importing them (coin.py, the countdown package)
WRITTEN_BY_THE_PAGE = {"coin", "countdown"}
#: first words of shell lines the docs may use
COMMANDS = {
    *("make", "openenv-train", "python", "python3", "pip", "curl", "cd", "ls", "cat", "export"),
    *("docker", "podman", "ray", "bash", ".", "git", "sudo", "apt-get", "kill", "jupyter"),
    *("tensorboard", "trackio", "chromium", "npm", "node", "npx", "ssh", "uvicorn", "sleep"),
}
VENV_PYTHONS = {".venv/bin/python", ".venv-vllm/bin/python"}


def blocks(*languages: str) -> list[tuple[str, str]]:
    return [
        (f"{page.relative_to(ROOT)}:{line}", code)
        for page in doc_pages()
        for line, lang, code in fenced_blocks(page)
        if lang in languages
    ]


def ids(cases: list[tuple[str, str]]) -> list[str]:
    return [where for where, _ in cases]


def test_every_block_names_a_language_we_check() -> None:
    bad = [
        f"{page.relative_to(ROOT)}:{line}: ```{lang}"
        for page in doc_pages()
        for line, lang, _ in fenced_blocks(page)
        if lang not in LANGUAGES
    ]
    assert not bad, f"use one of {sorted(LANGUAGES)}:\n" + "\n".join(bad)


# --- python -------------------------------------------------------------------------------------


def unresolved_imports(code: str) -> list[str]:
    """``module.name`` imported by ``code`` that does not exist (modules the page writes skipped)."""
    tree = ast.parse(code)  # top-level await parses; it is a compile-time error only
    missing = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            targets = [(node.module, a.name) for a in node.names]
        else:
            continue
        for module, name in targets:
            if module.split(".")[0] in WRITTEN_BY_THE_PAGE:
                continue
            try:
                mod = importlib.import_module(module)
            except ImportError as err:
                missing.append(f"{module} ({err})")
                continue
            if name and name != "*" and not hasattr(mod, name):
                try:
                    importlib.import_module(f"{module}.{name}")
                except ImportError:
                    missing.append(f"{module}.{name}")
    return missing


@pytest.mark.parametrize(("where", "code"), blocks("python"), ids=ids(blocks("python")))
def test_python_blocks_compile_and_import_what_exists(where: str, code: str) -> None:
    compile(code, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    assert not unresolved_imports(code), f"{where}: imports names that do not exist"


def test_the_import_check_catches_a_renamed_name() -> None:
    assert unresolved_imports("from openenv_train.training import make_rollout_fn")
    assert unresolved_imports("import openenv_train.trainers")
    assert not unresolved_imports("from openenv_train import Environment\nimport coin")


# --- shell --------------------------------------------------------------------------------------


@cache
def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([\w-]+):", text, flags=re.M))


@cache
def cli_options() -> dict[str, set[str]]:
    import argparse

    from openenv_train.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        name: {o for a in child._actions for o in a.option_strings}
        for name, child in sub.choices.items()
    } | {"": {"--version", "-h", "--help"}}


def shell_lines(code: str) -> list[str]:
    """Logical lines (continuations joined), comments and ``[optional]`` usage parts removed."""
    out = []
    for line in code.replace("\\\n", " ").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        line = re.sub(r"\s\[[^\]]*\]", "", line)  # usage notation: [--base-image IMG]
        out += [part.strip() for part in line.split("&&") if part.strip()]
    return out


def shell_problems(line: str) -> list[str]:
    words = shlex.split(line)
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # VAR=value prefixes
        words = words[1:]
    if not words:
        return []
    cmd, args = words[0], words[1:]
    problems = []
    if cmd in VENV_PYTHONS or cmd == "python3":
        cmd = "python"
    if cmd not in COMMANDS:
        return [f"unknown command {cmd!r}"]
    if cmd == "python" and args[:2] == ["-m", "openenv_train"]:
        cmd, args = "openenv-train", args[2:]
    if cmd == "make":
        for t in args:
            variable = re.fullmatch(r"([A-Z_]+)=.*", t, flags=re.S)
            if variable and variable[1] not in (ROOT / "Makefile").read_text():
                problems.append(f"no make variable {variable[1]!r}")
            elif not variable and t not in make_targets():
                problems.append(f"no make target {t!r}")
    elif cmd == "openenv-train":
        sub = args[0] if args and not args[0].startswith("-") else ""
        options = cli_options().get(sub)
        if options is None:
            return [f"no subcommand {sub!r}"]
        flags = [a.split("=")[0] for a in args if a.startswith("-")]
        problems += [f"{sub}: no flag {f!r}" for f in flags if f not in options]
        named = args[1] if sub in ("train", "configs") and len(args) > 1 else ""
        if named and not named.startswith("-") and "/" not in named:  # a shipped config's name
            if not (ROOT / "configs" / f"{named.removesuffix('.yaml')}.yaml").is_file():
                problems.append(f"no shipped config {named!r}")
    elif cmd in ("python", "bash") and args and args[0].endswith((".py", ".sh")):
        if not (ROOT / args[0]).is_file():
            problems.append(f"no script {args[0]}")
    for word in words:
        if re.fullmatch(r"configs/[\w.-]+\.yaml", word) and not (ROOT / word).is_file():
            problems.append(f"no config {word}")
    return problems


@pytest.mark.parametrize(("where", "code"), blocks(*SHELLS), ids=ids(blocks(*SHELLS)))
def test_shell_blocks_are_real_commands(where: str, code: str) -> None:
    bad = [f"{line}: {p}" for line in shell_lines(code) for p in shell_problems(line)]
    assert not bad, f"{where}:\n" + "\n".join(bad)


def test_the_shell_check_catches_a_wrong_flag_target_and_config() -> None:
    assert shell_problems("openenv-train train configs/grpo_blackjack_cpu.yaml --max-step 3")
    assert shell_problems("openenv-train trian x.yaml")
    assert shell_problems("make domo")
    assert shell_problems('make test-main NO_SUCH_VARIABLE="-x"')
    assert not shell_problems('make test-main PYTEST_ARGS="-x"')
    assert shell_problems("openenv-train train configs/nope.yaml")
    assert shell_problems("openenv-train train grpo_blackjack_nope")
    assert not shell_problems("openenv-train configs grpo_blackjack_cpu --copy .")
    assert not shell_problems("openenv-train train configs/grpo_blackjack_cpu.yaml --resume")


# --- yaml, toml, the architecture tree ----------------------------------------------------------


@cache
def recipe_keys() -> set[str]:
    from openenv_train.cli.config_keys import config_keys
    from openenv_train.cli.recipes import available_recipes

    return {k.key for r in available_recipes().values() for k in config_keys(r.config_class)}


def unknown_keys(data: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in data.items():
        path = f"{prefix}{key}"
        deeper = any(k.startswith(path + ".") for k in recipe_keys())
        if isinstance(value, dict) and deeper:  # a section: check its keys
            out += unknown_keys(value, path + ".")
        elif path not in recipe_keys():  # a key, or a dict-valued one such as env.ray.resources
            out.append(path)
    return out


@pytest.mark.parametrize(("where", "code"), blocks("yaml"), ids=ids(blocks("yaml")))
def test_yaml_blocks_parse_and_use_only_config_keys_that_exist(where: str, code: str) -> None:
    data = yaml.safe_load(code)
    assert isinstance(data, dict), where
    assert not unknown_keys(data), f"{where}: keys no recipe config has"


def test_the_key_check_catches_a_misspelled_key() -> None:
    assert unknown_keys({"rollout": {"max_stalenes": 1}}) == ["rollout.max_stalenes"]
    assert not unknown_keys({"env": {"ray": {"resources": {"env_node": 1}}}})


@pytest.mark.parametrize(("where", "code"), blocks("javascript"), ids=ids(blocks("javascript")))
def test_javascript_blocks_parse(where: str, code: str, tmp_path) -> None:
    """A renderer snippet is JavaScript Node parses (``node --check``; Node ships on these
    machines, and the playground's own scripts are checked the same way in tests/web)."""
    import shutil
    import subprocess

    node = shutil.which("node")
    assert node, "node is needed to check the docs' JavaScript blocks (apt-get install nodejs)"
    script = tmp_path / "block.js"
    script.write_text(code)
    out = subprocess.run([node, "--check", str(script)], capture_output=True, text=True)
    assert out.returncode == 0, f"{where}: {out.stderr}"


def test_json_blocks_parse() -> None:
    for where, code in blocks("json"):
        try:
            json.loads(code)
        except ValueError as err:
            raise AssertionError(f"{where}: {err}") from None


@pytest.mark.parametrize(("where", "code"), blocks("toml"), ids=ids(blocks("toml")))
def test_toml_blocks_are_lines_of_pyproject(where: str, code: str) -> None:
    pyproject = (ROOT / "pyproject.toml").read_text().splitlines()
    assert all(line in pyproject for line in code.splitlines() if line.strip()), where


def test_the_architecture_tree_names_exactly_the_packages() -> None:
    page = ROOT / "docs" / "concepts" / "architecture.md"
    [tree] = [code for _, lang, code in fenced_blocks(page) if code.startswith("openenv_train/")]
    named = set(re.findall(r"^  (\w+)/", tree, flags=re.M))
    packages = {p.name for p in (ROOT / "openenv_train").iterdir() if (p / "__init__.py").is_file()}
    assert named == packages
    top = set(re.findall(r"^(\w+)/", tree, flags=re.M)) - {"openenv_train"}
    assert all((ROOT / name).is_dir() for name in top), top


# --- dotted names in the prose ------------------------------------------------------------------

#: entry-point groups, not modules
ENTRY_POINT_GROUPS = {"openenv_train.envs", "openenv_train.env_families", "openenv_train.recipes"}


def unresolved_name(dotted: str) -> str | None:
    """``dotted`` if no module or attribute of that name exists (a module file is enough where
    importing it needs an optional dependency, e.g. vllm)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        module = ".".join(parts[:i])
        if not importlib.util.find_spec(module.rsplit(".", 1)[0] if i > 1 else module):
            continue
        try:
            obj = importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name and err.name.split(".")[0] == "openenv_train":
                continue
            return None if i == len(parts) else dotted  # exists; needs an optional dependency
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return dotted
            obj = getattr(obj, attr)
        return None
    return dotted


def test_every_openenv_train_name_the_docs_mention_exists() -> None:
    names = {
        name.rstrip(".")
        for page in doc_pages()
        for name in re.findall(r"openenv_train(?:\.[A-Za-z_]\w*)+", page.read_text())
    }
    bad = sorted(n for n in names - ENTRY_POINT_GROUPS if unresolved_name(n))
    assert not bad, f"the docs name what the code does not have: {bad}"
    assert unresolved_name("openenv_train.trainers.grpo") and unresolved_name("openenv_train.Nope")
