"""Recipe configs: both shipped YAMLs parse; every wrong value fails at start naming its key."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
import yaml

from openenv_train.recipes.grpo_blackjack.config import RecipeConfig, load_config, parse_config
from openenv_train.training.config import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_configs_parse() -> None:
    cpu = load_config(ROOT / "configs" / "grpo_blackjack_cpu.yaml")
    assert cpu.model.path is None and not cpu.grpo.use_vllm and cpu.grpo.use_cpu
    assert (
        cpu.grpo.use_adaptive_entropy and cpu.grpo.entropy_target == 0.15 and cpu.grpo.beta == 0.0
    )
    assert cpu.eval.hands == 20000
    # the schema's defaults are the shipped CPU config: a config that omits a key gets these
    assert cpu.model_dump() == RecipeConfig(name="grpo_blackjack_cpu").model_dump()
    gpu = load_config(ROOT / "configs" / "grpo_blackjack_qwen3_vllm.yaml")
    assert gpu.grpo.use_vllm and gpu.grpo.vllm_mode == "colocate" and gpu.model.hub
    assert gpu.model.path.startswith("Qwen/Qwen3-") and gpu.env.num_servers > cpu.env.num_servers


@pytest.mark.parametrize(
    ("data", "needles"),
    [
        ({"grpo": {"learning_rat": 1e-3}}, ["grpo.learning_rat", "unknown key"]),
        ({"modle": {}}, ["modle", "unknown key"]),
        (
            {"grpo": {"per_device_train_batch_size": 100, "num_generations": 16}},
            ["grpo.num_generations=16", "not divisible", "96"],
        ),
        (
            {"grpo": {"num_generations": 1, "per_device_train_batch_size": 8}},
            ["grpo.num_generations=1", ">= 2"],
        ),
        ({"grpo": {"learning_rate": -1}}, ["grpo.learning_rate"]),
        ({"recipe": "chess"}, ["recipe"]),
        ({"eval": {"hands": 0}}, ["eval.hands"]),
        ({"model": {"warmup_loss_on": "prompts"}}, ["model.warmup_loss_on"]),
        ({"model": {"tiny": {"init_std": 0}}}, ["model.tiny.init_std"]),
        ({"rollout": {"state_weight_power": 2}}, ["rollout.state_weight_power"]),
        (
            {"rollout": {"same_state_per_group": True, "same_deal_per_group": True}},
            ["rollout.same_state_per_group", "choose one"],
        ),
    ],
)
def test_bad_values_are_named(data: dict, needles: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    for needle in needles:
        assert needle in str(info.value)


def test_an_existing_model_folder_is_accepted(tmp_path: Path) -> None:
    from openenv_train.training.checks import start_checks

    (tmp_path / "config.json").write_text("{}")
    cfg = parse_config({"model": {"path": str(tmp_path)}})
    start_checks(cfg)
    assert cfg.model.path == str(tmp_path)


def test_a_missing_model_folder_fails_at_start_not_at_load(tmp_path: Path, monkeypatch) -> None:
    """The schema does no I/O: the folder is looked for when the run starts (open_run), where a
    relative path resolves against the working directory."""
    from openenv_train.training.checks import start_checks

    cfg = parse_config({"model": {"path": "/no/such/model"}})  # loads: nothing is looked up
    with pytest.raises(ConfigError) as info:
        start_checks(cfg)
    for needle in ("model.path", "/no/such/model", "config.json"):
        assert needle in str(info.value)
    (tmp_path / "saved").mkdir()
    (tmp_path / "saved" / "config.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    cfg = parse_config({"model": {"path": "saved"}})
    start_checks(cfg)
    assert cfg.model.path == str(tmp_path / "saved")


def test_load_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("grpo: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    seq = tmp_path / "seq.yaml"
    seq.write_text(yaml.safe_dump([1, 2]))
    with pytest.raises(ConfigError, match="mapping"):
        load_config(seq)


@pytest.mark.parametrize("init_std", [0.02, 0.1])
def test_the_tiny_model_is_built_with_the_configured_init_std(init_std: float) -> None:
    from blackjack_env.text_spec import VOCABULARY

    from openenv_train.training.model import load_model

    cfg = parse_config({"model": {"warmup_steps": 0, "tiny": {"init_std": init_std}}})
    model, _tok = load_model(cfg, VOCABULARY)
    std = float(model.get_input_embeddings().weight.std())
    assert abs(std - init_std) < 0.2 * init_std, std


def test_every_shipped_config_loads_on_the_one_schema() -> None:
    """Each YAML names its recipe; that recipe's config class is a RunConfig of the shared schema."""
    from openenv_train.training.config import RunConfig

    for path in sorted((ROOT / "configs").glob("*.yaml")):
        recipe = yaml.safe_load(path.read_text())["recipe"]
        cfg = importlib.import_module(f"openenv_train.recipes.{recipe}.config").load_config(path)
        assert isinstance(cfg, RunConfig) and cfg.recipe == recipe, path.name


def test_no_recipe_config_imports_another_recipe() -> None:
    for path in sorted((ROOT / "recipes").glob("*/config.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                target = "." * node.level + (node.module or "")
                assert node.level < 2 and not target.startswith(
                    ("recipes.", "openenv_train.recipes.")
                ), (
                    f"{path.relative_to(ROOT)} imports {target}: shared config lives in "
                    "openenv_train.training.config"
                )
