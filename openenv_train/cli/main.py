"""The ``openenv-train`` command.

    openenv-train train CONFIG.yaml            run the recipe a config names (``recipe:`` key)
    openenv-train serve APP [--host --port]    serve an env app (``pkg.server.app:app``)
    openenv-train eval MODEL_DIR [--hands N]   greedy BlackJack eval of a saved model vs baselines

Recipes live in the repo's ``recipes/<name>/`` (a ``train.py`` with ``run(cfg)`` and a
``config.py`` with ``load_config(path)``); they are found next to the config file or in the
working directory, so the command works from a fresh clone without installing them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any

import yaml


class CLIError(Exception):
    """A user mistake on the command line; printed without a traceback, exit status 2."""


def _recipe_roots(config: Path | None) -> list[Path]:
    roots = [Path.cwd()]
    if config is not None:
        roots += [config.resolve().parent.parent, config.resolve().parent]
    roots.append(Path(__file__).resolve().parents[2])  # the source checkout, for editable installs
    return roots


def import_recipe(name: str, config: Path | None = None) -> Any:
    """``recipes.<name>.train`` (a module with ``run(cfg)``); adds the repo root to ``sys.path`` if needed."""
    if not name.isidentifier():
        raise CLIError(
            f"recipe: {name!r} is not a recipe name; use a folder name under recipes/ (e.g. grpo_blackjack)"
        )
    try:
        return importlib.import_module(f"recipes.{name}.train")
    except ModuleNotFoundError as err:
        if not (err.name or "").startswith("recipes"):
            raise
    for root in _recipe_roots(config):
        if (root / "recipes" / name / "train.py").is_file():
            sys.path.insert(0, str(root))
            sys.modules.pop("recipes", None)
            return importlib.import_module(f"recipes.{name}.train")
    found = sorted(
        {
            p.parent.name
            for root in _recipe_roots(config)
            for p in (root / "recipes").glob("*/train.py")
        }
    )
    raise CLIError(
        f"recipe: no recipe named {name!r} (looked for recipes/{name}/train.py from {Path.cwd()}); "
        f"available: {found or 'none found - run from the repository root'}"
    )


def cmd_train(args: argparse.Namespace) -> int:
    path = Path(args.config)
    if not path.is_file():
        raise CLIError(
            f"config: {args.config!r} does not exist; pass a YAML file like configs/grpo_blackjack_cpu.yaml"
        )
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise CLIError(f"config: {path} is not valid YAML: {err}") from None
    if not isinstance(raw, dict):
        raise CLIError(f"config: {path} must be a YAML mapping of settings")
    name = raw.get("recipe", "grpo_blackjack")
    module = import_recipe(str(name), path)
    config_module = importlib.import_module(module.__name__.rsplit(".", 1)[0] + ".config")
    try:
        cfg = config_module.load_config(path)
    except ValueError as err:
        raise CLIError(str(err)) from None
    if args.max_steps is not None:
        if hasattr(cfg, "grpo"):
            cfg.grpo.max_steps = args.max_steps
        else:  # forge-style recipes name it `steps`, as forge's configs do
            cfg.steps = args.max_steps
    if args.name is not None:
        cfg.name = args.name
    module.run(cfg)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    if ":" not in args.app:
        raise CLIError(
            f"app: {args.app!r} must be an import path 'package.module:attribute' (e.g. echo_env.server.app:app)"
        )
    from openenv_train.server import serve

    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: serving on {args.host}, reachable from other machines", file=sys.stderr)
    serve(args.app, host=args.host, port=args.port)
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    model_dir = Path(args.model)
    if not (model_dir / "config.json").is_file():
        raise CLIError(
            f"model: {args.model!r} is not a saved model folder (no config.json); pass runs/<name>/model"
        )
    module = import_recipe("grpo_blackjack")
    evaluate = importlib.import_module(module.__name__.rsplit(".", 1)[0] + ".evaluate")
    import torch
    from rich.console import Console

    from openenv_train.policy.tiny import load_tiny_model
    from openenv_train.policy.transformers_policy import TransformersPolicy

    torch.set_num_threads(args.threads)
    model, tokenizer = load_tiny_model(model_dir)
    result = evaluate.evaluate_policy(TransformersPolicy(model, tokenizer), args.hands, args.seed)
    rows = {"model": result, **evaluate.baselines(args.hands, args.seed)}
    Console().print(module._table(f"{model_dir} ({args.hands} fresh hands, greedy)", rows))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="openenv-train", description="Train LLM agents with RL on OpenEnv environments."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("train", help="run a recipe config (e.g. configs/grpo_blackjack_cpu.yaml)")
    p.add_argument("config", help="YAML recipe config")
    p.add_argument("--max-steps", type=int, default=None, help="override grpo.max_steps")
    p.add_argument("--name", default=None, help="override the run name (output under runs/<name>)")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("serve", help="serve an env app over HTTP/WebSocket")
    p.add_argument("app", help="ASGI import path, e.g. blackjack_env.server.app:app")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default loopback only)")
    p.add_argument("--port", type=int, default=8000)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("eval", help="greedy BlackJack eval of a saved model beside the baselines")
    p.add_argument("model", help="model folder (runs/<name>/model)")
    p.add_argument("--hands", type=int, default=20000)
    p.add_argument("--seed", type=int, default=2_000_000_000)
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=cmd_eval)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``openenv-train`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CLIError as err:
        print(f"openenv-train {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
