"""The ``openenv-train`` command.

    openenv-train train CONFIG.yaml            run the recipe a config names (``recipe:`` key)
    openenv-train train NAME                   the same with a shipped config (``configs`` lists them)
    openenv-train train CONFIG.yaml --resume   continue its run from the last checkpoint
    openenv-train init NAME [--dir D]          scaffold an env package (env_cli)
    openenv-train serve PATH_OR_APP [--runtime local|docker|podman] [--port]
    openenv-train build PATH [--tag --base-image]    build an env image
    openenv-train validate PATH|URL|IMAGE [--json]   static, runtime, hardening checks
    openenv-train eval MODEL_DIR [--recipe R]  evaluate a saved model with its recipe's evaluator
    openenv-train eval MODEL_DIR --k K         pass@k and mean@k per env, trajectories as JSONL
    openenv-train eval URL --k K --env ENV     the same for a model behind an OpenAI-compatible URL
    openenv-train replay TRAJ.jsonl            replay stored trajectories, report differing rewards
    openenv-train envs [NAME] [--json]         installed envs with their action/observation schema
    openenv-train config-keys RECIPE           every config key of a recipe (type, default, meaning)
    openenv-train recipes                      the registered recipes, one line each
    openenv-train configs [NAME] [--copy DIR]  the shipped configs by name; copy one to edit
    openenv-train --version                    (``python -m openenv_train`` is the same command)
    openenv-train curve RUN_A RUN_B [--out P]  learning curves of runs side by side (compare.png)
    openenv-train view RUN [RUN ...]           a local page: curves, eval episodes, config
    openenv-train export RUN --merge           a LoRA run's adapter merged into its base (RUN/merged)

Recipes are found by name in the ``openenv_train.recipes`` entry point group (see
``openenv_train.cli.recipes`` for the contract and how to register one).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from .. import __version__
from ..runtime.signals import raise_on_stop_signals
from .configs_cmd import UnknownConfigError, resolve_config
from .configs_cmd import register as register_configs
from .curve_cmd import register as register_curve
from .envs_cmd import register as register_envs
from .errors import CLIError as CLIError
from .export_cmd import register as register_export
from .overrides import OverrideError, apply_overrides, check_resume_config
from .passk_cmd import add_eval_arguments, endpoint_passk, passk
from .passk_cmd import register as register_replay
from .recipes import RecipeError, available_recipes, get_recipe, recipe_lines
from .view_cmd import register as register_view


def cmd_train(args: argparse.Namespace) -> int:
    path = resolve_config(args.config)
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise CLIError(f"config: {path} is not valid YAML: {err}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("recipe"), str):
        raise CLIError(
            f"config: {path} must be a YAML mapping whose 'recipe:' key names a recipe "
            "(e.g. recipe: grpo_blackjack)"
        )
    recipe = get_recipe(raw["recipe"])
    try:
        cfg = _load_with_overrides(recipe, path, raw, args.set or [])
    except ValueError as err:
        raise CLIError(str(err)) from None
    if hasattr(cfg, "given_as"):  # the resume hint repeats how this config was given
        cfg.given_as(" ".join([args.config, *(f"--set {s}" for s in args.set or [])]))
    if args.max_steps is not None:
        if hasattr(getattr(cfg, "grpo", None), "max_steps"):
            cfg.grpo.max_steps = args.max_steps
        elif hasattr(cfg, "steps"):  # forge-style recipes name it `steps`, as forge's configs do
            cfg.steps = args.max_steps
        elif isinstance(getattr(cfg, "trainer", None), dict):  # trainer: keys are TRL's own
            cfg.trainer["max_steps"] = args.max_steps
        else:
            raise CLIError(
                f"--max-steps: recipe {recipe.name!r} has no grpo.max_steps, steps or "
                "trainer.max_steps setting"
            )
    if args.name is not None:
        cfg.name = args.name
    if args.resume is not None:
        _resume(cfg, recipe.name, args.resume)
        check_resume_config(cfg, args.force_resume)
    from ..core.errors import ServerStartError
    from ..training.config import ConfigError

    try:
        recipe.run(cfg)
    except ServerStartError as err:  # a missing image, a port in use: the fix, not a traceback
        raise CLIError(f"env: {err}") from None
    except ConfigError as err:  # found at start: a hub model offline
        raise CLIError(str(err)) from None
    return 0


def _load_with_overrides(recipe: Any, path: Path, raw: dict[str, Any], sets: list[str]) -> Any:
    """The recipe's checked config from ``path`` with ``--set a.b=c`` applied first, so the
    overrides go through the same schema (an unknown key is named like one in the file)."""
    if not sets:
        return recipe.load_config(path)
    data = apply_overrides(raw, sets)
    with tempfile.TemporaryDirectory(prefix="openenv-train-set-") as tmp:
        merged = Path(tmp) / path.name
        merged.write_text(yaml.safe_dump(data, sort_keys=False))
        return recipe.load_config(merged)


def _resume(cfg: object, recipe: str, run_dir: str | bool) -> None:
    """``--resume``: continue the config's run folder (or RUN_DIR) from its last checkpoint."""
    from ..training.config import RunConfig  # the schema every resumable recipe's config extends

    if not isinstance(cfg, RunConfig):
        raise CLIError(f"--resume: recipe {recipe!r} cannot resume a run")
    if isinstance(run_dir, str):
        folder = Path(run_dir)
        cfg.output_dir, cfg.name = str(folder.parent), folder.name
    folder = Path(cfg.output_dir) / cfg.name
    if not any((folder / "trainer").glob("checkpoint-*")):
        raise CLIError(
            f"--resume: {folder} has no checkpoint to continue from ({folder}/trainer/checkpoint-N "
            "is written at periodic evals and on Ctrl-C); train without --resume to start the run"
        )
    cfg.resume = True


def cmd_eval(args: argparse.Namespace) -> int:
    if args.model.startswith(("http://", "https://")):  # an OpenAI-compatible endpoint
        try:
            return endpoint_passk(args)
        except ValueError as err:
            raise CLIError(str(err)) from None
    model_dir = Path(args.model)
    if not any((model_dir / f).is_file() for f in ("config.json", "adapter_config.json")):
        raise CLIError(
            f"model: {args.model!r} is not a saved model folder (no config.json); pass runs/<name>/model"
        )
    name = args.recipe
    run_config = model_dir.parent / "config.json"  # what ``train`` writes next to model/
    if name is None and run_config.is_file():
        name = json.loads(run_config.read_text()).get("recipe")
    if not isinstance(name, str):
        raise CLIError(
            f"recipe: {model_dir} is not inside a training run folder that names its recipe; "
            "pass --recipe NAME"
        )
    from ..training.callbacks import quiet_third_party

    quiet_third_party()  # no weight-loading bars or dependency notices in a log or a pipe
    if args.k is not None:
        try:
            return passk(args)
        except ValueError as err:
            raise CLIError(str(err)) from None
    recipe = get_recipe(name)
    if not recipe.can_evaluate:
        raise CLIError(f"recipe: {name!r} declares no evaluator (evaluate.evaluate_saved_model)")
    from ..training.config import ConfigError

    try:
        recipe.evaluate(model_dir, episodes=args.episodes, seed=args.seed)
    except ConfigError as err:  # e.g. the env's module, imported from the training run's folder
        raise CLIError(
            f"{err}\n(the run's config is {run_config}; run `eval` from the folder you trained in)"
        ) from None
    return 0


def cmd_recipes(args: argparse.Namespace) -> int:
    for line in recipe_lines():
        print(line)
    return 0


def recipe_table(name: str) -> str:
    """The Markdown table of recipe ``name``'s config keys."""
    from .config_keys import markdown_table

    return markdown_table(get_recipe(name).config_class)


def cmd_config_keys(args: argparse.Namespace) -> int:
    from .config_keys import fill_tables

    if args.readme is None:
        if args.recipe is None:
            raise CLIError(f"RECIPE: name one of {sorted(available_recipes())}")
        print(recipe_table(args.recipe), end="")
        return 0
    path = Path(args.readme)
    if not path.is_file():
        raise CLIError(
            f"--readme: {args.readme!r} does not exist; pass the page to update (docs/reference/config-keys.md)"
        )
    text = path.read_text()
    new = fill_tables(text, recipe_table)
    if new != text:
        path.write_text(new)
    print(f"{path}: config key tables {'updated' if new != text else 'already up to date'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="openenv-train", description="Train LLM agents with RL on OpenEnv environments."
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("train", help="run a recipe config (e.g. configs/grpo_blackjack_cpu.yaml)")
    p.add_argument(
        "config", help="YAML recipe config, or a shipped config's name (openenv-train configs)"
    )
    p.add_argument("--max-steps", type=int, default=None, help="override grpo.max_steps (or steps)")
    p.add_argument("--name", default=None, help="override the run name (output under runs/<name>)")
    p.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=None,
        metavar="RUN_DIR",
        help="continue runs/<name> (or RUN_DIR) from its last checkpoint, appending to its metrics",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override one config key, e.g. --set grpo.learning_rate=1e-4 (YAML value; repeatable)",
    )
    p.add_argument(
        "--force-resume",
        action="store_true",
        help="--resume even though the config differs from the run's config.json",
    )
    p.set_defaults(func=cmd_train)

    from .env_cli import register as register_env_commands

    register_env_commands(sub)  # init, serve, build, validate

    p = sub.add_parser("eval", help="evaluate a saved model with its recipe's evaluator")
    p.add_argument(
        "model", help="model folder (runs/<name>/model) or an OpenAI-compatible endpoint URL"
    )
    p.add_argument("--recipe", default=None, help="recipe name (default: the run's config.json)")
    p.add_argument(
        "--episodes", "--hands", type=int, default=None, help="episodes (default: the recipe's)"
    )
    p.add_argument("--seed", type=int, default=None, help="evaluation seed (default: the recipe's)")
    add_eval_arguments(p)
    p.set_defaults(func=cmd_eval)

    register_envs(sub)

    p = sub.add_parser(
        "config-keys", help="every config key of a recipe: type, default, description (Markdown)"
    )
    p.add_argument("recipe", nargs="?", default=None, help="recipe name, e.g. grpo_blackjack")
    p.add_argument(
        "--readme",
        default=None,
        help="rewrite the marked tables of this Markdown page in place (make config-table: "
        "docs/reference/config-keys.md) instead of printing one",
    )
    p.set_defaults(func=cmd_config_keys)
    p = sub.add_parser(
        "recipes", help="the registered recipes, one line each (openenv-train train)"
    )
    p.set_defaults(func=cmd_recipes)
    register_configs(sub)
    register_curve(sub)
    register_view(sub)
    register_export(sub)
    register_replay(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``openenv-train`` console script."""
    args = build_parser().parse_args(argv)
    raise_on_stop_signals()  # SIGTERM and SIGHUP stop a command the way Ctrl-C does
    try:
        return int(args.func(args) or 0)
    except (CLIError, RecipeError, OverrideError, UnknownConfigError) as err:
        print(f"openenv-train {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
