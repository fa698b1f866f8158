"""``pip install openenv-train`` gives the whole product: the sdists and wheels built from this
checkout (scripts/dist.py, what ``make dist`` runs), installed into a fresh virtual environment
with no repository on the path, run the quick start, ``openenv-train envs``, an env author's
``init`` -> ``serve`` -> ``validate`` and a few steps of the demo config, named, not a path.

Offline by design: the build uses this environment's setuptools (no build isolation) and pip
installs from the built files only (``--no-index``). The third-party dependencies (torch, trl,
...) come from a ``.pth`` line to a folder of links to this environment's site-packages, minus
the project's own distributions and editable-install hooks, so the checkout stays invisible.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import httpx
import pytest
from docs_support import ROOT, load_script

from openenv_train import __version__

pytestmark = pytest.mark.timeout(600)

ENV_MODULES = {p.parent.name for p in ROOT.glob("envs/*/pyproject.toml")}
# what of this environment's site-packages is the project itself (never linked into the venv)
OWN = re.compile(r"^(openenv_train|__editable__)|\.pth$")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Venv:
    """A fresh virtual environment that sees the dependencies but not this checkout."""

    def __init__(self, root: Path, work: Path) -> None:
        self.root, self.work = root, work
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
        self.python = root / "bin" / "python"
        site = Path(
            subprocess.check_output(
                [
                    str(self.python),
                    "-c",
                    "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                ],
                text=True,
            ).strip()
        )
        deps = root / "deps"
        deps.mkdir()
        for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
            if not (OWN.search(entry.name) or entry.name in ENV_MODULES):
                (deps / entry.name).symlink_to(entry)
        (site / "_dependencies.pth").write_text(f"{deps}\n")
        self.env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
        self.env["PATH"] = f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"

    def run(
        self, *args: str, check: bool = True, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        """``args`` in the venv (``python``, ``openenv-train`` ... from its bin/), cwd ``work``."""
        if args[0] == "pip":  # this environment's pip, installing into the venv
            cmd = [sys.executable, "-m", "pip", "--python", str(self.python), *args[1:]]
        else:
            cmd = [str(self.root / "bin" / args[0]), *args[1:]]
        done = subprocess.run(
            cmd,
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and done.returncode:
            raise AssertionError(
                f"{' '.join(args)} -> {done.returncode}\n{done.stdout}{done.stderr}"
            )
        return done

    def pip_install(self, dist: Path, *requirements: str) -> None:
        self.run("pip", "install", "-q", "--no-index", "--find-links", str(dist), *requirements)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    script = load_script("dist")
    script.twine_check(script.build(out))
    return out


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, dist: Path) -> Venv:
    base = tmp_path_factory.mktemp("fresh")
    (base / "work").mkdir()
    env = Venv(base / "venv", base / "work")
    env.pip_install(dist, "openenv-train[envs]")  # the user's command, resolved from dist/ alone
    return env


def test_each_package_builds_an_sdist_and_a_wheel_of_the_one_version(dist: Path) -> None:
    names = {"openenv_train"} | {f"openenv_train_{m}" for m in ENV_MODULES}
    assert {p.name.split("-")[0] for p in dist.glob("*.whl")} == names
    assert {p.name.split("-")[0] for p in dist.glob("*.tar.gz")} == names
    wheel = dist / f"openenv_train-{__version__}-py3-none-any.whl"
    files = zipfile.ZipFile(wheel).namelist()
    # no generic top-level `recipes` (or configs) package: everything lives in the namespace
    assert {f.split("/")[0] for f in files} == {
        "openenv_train",
        f"openenv_train-{__version__}.dist-info",
    }
    shipped = {p.name for p in (ROOT / "configs").glob("*.yaml")}
    assert {f.rsplit("/", 1)[1] for f in files if f.startswith("openenv_train/configs/")} == shipped
    assert "openenv_train/recipes/grpo_blackjack/train.py" in files


def test_the_install_runs_from_the_venv_not_the_checkout(venv: Venv) -> None:
    probe = (
        "import importlib.util, json, openenv_train, openenv_train.recipes.grpo_blackjack as r, "
        "blackjack_env; print(json.dumps([openenv_train.__file__, r.__file__, "
        "blackjack_env.__file__, importlib.util.find_spec('recipes') is None]))"
    )
    *files, no_top_level_recipes = json.loads(venv.run("python", "-c", probe).stdout)
    assert all(Path(f).is_relative_to(venv.root) for f in files), files
    assert no_top_level_recipes
    assert venv.run("openenv-train", "--version").stdout.split() == ["openenv-train", __version__]
    recipes = venv.run("openenv-train", "recipes").stdout
    assert "grpo_blackjack " in recipes and "cannot import" not in recipes


def test_the_quick_start_runs_as_the_docs_write_it(venv: Venv) -> None:
    page = (ROOT / "docs" / "getting-started.md").read_text()
    section = page.split("## The first env", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert code, "docs/getting-started.md: 'The first env' has no python block"
    (venv.work / "quick_start.py").write_text(code.group(1))
    out = venv.run("python", "quick_start.py").stdout
    assert "Echo environment ready!" in out and "Hello, World!" in out


def test_envs_lists_the_installed_and_names_the_rest(venv: Venv, dist: Path) -> None:
    out = venv.run("openenv-train", "envs").stdout
    assert all(name in out for name in ("echo", "blackjack", "guess_number", "wordle", "coding"))
    assert "not installed" not in out
    venv.run("pip", "uninstall", "-q", "-y", "openenv-train-wordle-env")
    try:
        out = venv.run("openenv-train", "envs").stdout
        assert "not installed: openenv-train-wordle-env" in out
        assert "pip install 'openenv-train[envs]'" in out
    finally:
        venv.pip_install(dist, "openenv-train-wordle-env")


def test_an_env_author_inits_serves_and_validates(venv: Venv) -> None:
    venv.run("openenv-train", "init", "my_env")
    port = _free_port()
    server = subprocess.Popen(
        [str(venv.root / "bin" / "openenv-train"), "serve", "my_env", "--port", str(port)],
        cwd=venv.work,
        env=venv.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "openenv-train serve my_env never answered /health"
            time.sleep(0.5)
        report = venv.run("openenv-train", "validate", f"http://127.0.0.1:{port}", "--json")
        assert json.loads(report.stdout)["passed"] is True, report.stdout
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_demo_config_trains_a_few_steps_by_name(venv: Venv) -> None:
    listing = venv.run("openenv-train", "configs").stdout
    assert re.search(r"^grpo_blackjack_cpu_async\s+\S", listing, flags=re.M), listing
    venv.run(
        "openenv-train",
        "train",
        "grpo_blackjack_cpu_async",
        "--max-steps",
        "2",
        "--name",
        "by_name",
        *("--set", "model.warmup_steps=2"),
        *("--set", "grpo.per_device_train_batch_size=32"),
        *("--set", "eval.hands=20"),
        *("--set", "eval.periodic_hands=20"),
        *("--set", "eval.every=1"),
        timeout=400,
    )
    metrics = venv.work / "runs" / "by_name" / "metrics.jsonl"
    assert metrics.is_file() and metrics.read_text().strip()
    venv.run("openenv-train", "configs", "grpo_blackjack_cpu_async", "--copy", ".")
    copied = venv.work / "grpo_blackjack_cpu_async.yaml"
    assert copied.read_text() == (ROOT / "configs" / copied.name).read_text()


def _own_env_section() -> str:
    text = (ROOT / "docs" / "tutorials" / "own-env.md").read_text()
    start = text.index("## Train GRPO on your own env")
    end = text.find("\n## ", start + 10)
    return text[start : end if end > 0 else len(text)]


def test_a_newcomer_trains_views_evaluates_and_replays_their_own_env(venv: Venv) -> None:
    """The newcomer's path of issue 36, from the wheels alone: the own-env tutorial's scaffold,
    reward, spec and config; ``validate .``; a few training steps; ``view`` answering with its
    first view inline; ``eval --k``; and ``replay`` of that eval exiting 0."""
    import yaml

    section = _own_env_section()
    spec_code = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    config = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, flags=re.S).group(1))
    venv.run("openenv-train", "init", "countdown")
    project = venv.work / "countdown"
    env_file = project / "countdown" / "server" / "environment.py"
    env_file.write_text(
        env_file.read_text().replace(
            "reward=float(self._total)",
            "reward=(1.0 if self._total == self._target else -1.0) if done else 0.0",
        )
    )
    (project / "countdown" / "text_spec.py").write_text(spec_code)
    config["model"] = {"warmup_steps": 10, "warmup_batch_size": 32}  # the path, not learning
    config["grpo"].update(max_steps=2, per_device_train_batch_size=32, logging_steps=1)
    config["eval"].update(every=2, episodes=16, periodic_episodes=16)
    (project / "countdown.yaml").write_text(yaml.safe_dump(config))

    def in_project(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(venv.root / "bin" / "openenv-train"), *args],
            cwd=project,
            env=venv.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, f"{args} -> {done.returncode}\n{done.stdout}{done.stderr}"
        return done

    report = json.loads(in_project("validate", ".", "--json").stdout)
    assert report["passed"] is True, report
    in_project("train", "countdown.yaml", timeout=400)
    run = project / "runs" / "countdown"
    assert (run / "model" / "config.json").is_file()

    port = _free_port()
    viewer = subprocess.Popen(
        [str(venv.root / "bin" / "openenv-train"), "view", "runs/countdown", "--port", str(port)],
        cwd=project,
        env=venv.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert viewer.poll() is None, viewer.stderr.read() if viewer.stderr else ""
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "openenv-train view never answered"
                time.sleep(0.5)
        assert page.status_code == 200 and 'id="preload"' in page.text and "countdown" in page.text
    finally:
        viewer.terminate()
        viewer.wait(timeout=30)

    done = in_project("eval", "runs/countdown/model", "--k", "2", "--tasks", "4")
    assert "pass@2" in done.stdout
    replay = in_project("replay", "runs/countdown/eval/trajectories_k2.jsonl")
    assert "replayed 8 episodes: 0 reward(s) differ" in replay.stdout
