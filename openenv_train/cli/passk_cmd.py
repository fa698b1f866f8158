"""``openenv-train eval MODEL --k K``: pass@k and mean@k per env, with every episode's trajectory;
``openenv-train replay TRAJ.jsonl``: the stored answers played again, differing rewards reported.

    openenv-train eval runs/NAME/model --k 8 --tasks 64 [--json] [--trajectories OUT.jsonl]
    openenv-train eval http://HOST:PORT/v1 --served-model NAME --tokenizer DIR --env ENV --k 8
    openenv-train replay OUT.jsonl [--app ENV=module:app] [--url ENV=URL] [--json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def load_run_config(model_dir: Path, recipe_name: str | None) -> Any:
    """The training run's config (``config.json`` beside ``model/``), as its recipe's schema."""
    from .recipes import get_recipe

    path = model_dir.parent / "config.json"
    if not path.is_file():
        raise ValueError(
            f"model: {model_dir} is not inside a training run folder (no {path}); pass runs/<name>/model"
        )
    data = json.loads(path.read_text())
    recipe = get_recipe(recipe_name or data.get("recipe", ""))
    return recipe.config_class.model_validate(data)


def passk(args: argparse.Namespace) -> int:
    """``eval --k``: sample, score, print (or ``--json``), write the trajectories and the
    result (the scores with every parameter behind them; OpenEnv's ``EvalResult`` shape)."""
    import torch

    from ..policy.tiny import load_tiny_model
    from ..policy.transformers_policy import TransformersPolicy
    from ..rollout.episode import RolloutConfig
    from ..training.passk import targets_of_run
    from ..training.passk_eval import PassAtKEval

    model_dir = Path(args.model)
    cfg = load_run_config(model_dir, args.recipe)
    targets = targets_of_run(cfg)
    if args.env:
        known = [t.name for t in targets]
        targets = [t for t in targets if t.name in args.env]
        if not targets:
            raise ValueError(f"--env: {args.env} names none of this run's envs {known}")
    r = getattr(cfg, "rollout", None)
    limit = getattr(getattr(cfg, "grpo", None), "max_completion_length", 512)
    config = RolloutConfig(
        temperature=args.temperature,
        max_turns=getattr(r, "max_turns", 16),
        max_new_tokens=getattr(r, "max_new_tokens", 16),
        max_episode_tokens=limit,
        system_prompt=getattr(r, "system_prompt", None),
        episode_seed=args.seed if args.seed is not None else 0,
    )
    torch.set_num_threads(1)
    model, tokenizer = load_tiny_model(model_dir)
    seed = args.seed if args.seed is not None else getattr(cfg.eval, "seed", 0)
    passk_eval = PassAtKEval(TransformersPolicy(model, tokenizer), targets)
    result = passk_eval.run_config(
        passk_eval.config(
            tasks=args.tasks,
            k=args.k,
            seed=seed,
            threshold=args.threshold,
            rollout=config,
            model=str(model_dir),
        )
    )
    return write_report(args, result, passk_eval.trajectories, model_dir.parent / "eval", seed)


def endpoint_passk(args: argparse.Namespace) -> int:
    """``eval URL --k K --env ENV``: pass@k of the model an OpenAI-compatible ``/v1/completions``
    server serves (``--served-model``; ``--tokenizer``: its tokenizer's folder, for token ids) on
    catalog envs that name a text spec. Tasks, trajectories and the result as for a saved model."""
    from ..catalog import get_entry
    from ..policy.openai_policy import OpenAICompatiblePolicy
    from ..policy.tiny import load_tiny_tokenizer
    from ..rollout.episode import RolloutConfig
    from ..training.passk import EvalTarget
    from ..training.passk_eval import PassAtKEval

    if args.k is None or not args.env or not args.tokenizer:
        raise ValueError("eval URL: give --k K, --env ENV (one or more) and --tokenizer DIR")
    targets = []
    for name in args.env:
        entry = get_entry(name)
        if entry.text_spec_path is None:
            raise ValueError(f"--env {name}: its catalog entry names no text spec to evaluate with")
        targets.append(EvalTarget(name, app=entry.app, spec=entry.text_spec_path))
    tokenizer = load_tiny_tokenizer(args.tokenizer)
    policy = OpenAICompatiblePolicy(args.model, args.served_model, tokenizer=tokenizer)
    config = RolloutConfig(
        temperature=args.temperature,
        max_turns=args.max_turns,
        max_new_tokens=args.max_new_tokens,
        max_episode_tokens=args.max_episode_tokens,
        episode_seed=args.seed or 0,
    )
    seed = args.seed or 0
    passk_eval = PassAtKEval(policy, targets)
    result = passk_eval.run_config(
        passk_eval.config(
            tasks=args.tasks,
            k=args.k,
            seed=seed,
            threshold=args.threshold,
            rollout=config,
            model=f"{args.model} ({args.served_model})",
        )
    )
    return write_report(args, result, passk_eval.trajectories, Path("eval"), seed)


def write_report(
    args: argparse.Namespace, result: dict[str, Any], rows: list[Any], folder: Path, seed: int
) -> int:
    """Write the trajectories and the result; print the table (or ``--json``)."""
    from ..training.passk import results_rows, write_jsonl

    model_dir = args.model
    report = result["scores"]
    out = Path(args.trajectories or folder / f"trajectories_k{args.k}.jsonl")
    write_jsonl(out, rows)
    result_path = Path(args.result or folder / f"result_k{args.k}.json")
    result_path.parent.mkdir(parents=True, exist_ok=True)
    result_path.write_text(json.dumps(result, indent=2))
    if args.json:
        print(
            json.dumps(
                {
                    "model": str(model_dir),
                    "seed": seed,
                    "envs": report,
                    "trajectories": str(out),
                    "result": str(result_path),
                },
                indent=2,
            )
        )
        return 0
    from rich.console import Console
    from rich.table import Table

    header, table_rows = results_rows(report)
    table = Table(
        title=f"{model_dir}: {args.tasks} tasks x {args.k} samples per env "
        f"(temperature {args.temperature}, success: reward > {args.threshold})"
    )
    for h in header:
        table.add_column(h, justify="left" if h == "env" else "right")
    for row in table_rows:
        table.add_row(*row)
    Console().print(table)
    print(f"trajectories ({len(rows)} episodes) -> {out}; replay: openenv-train replay {out}")
    print(f"result (scores and every parameter behind them) -> {result_path}")
    return 0


def pairs(values: list[str] | None, flag: str) -> dict[str, str]:
    out = {}
    for v in values or []:
        env, sep, rest = v.partition("=")
        if not sep or not env or not rest:
            raise ValueError(f"{flag}: {v!r} is not ENV=VALUE (e.g. {flag} blackjack=...)")
        out[env] = rest
    return out


def cmd_replay(args: argparse.Namespace) -> int:
    import sys

    from ..training.replay import replay_file

    try:
        report = replay_file(
            args.trajectories,
            urls=pairs(args.url, "--url"),
            apps=pairs(args.app, "--app"),
            tolerance=args.tolerance,
        )
    except ValueError as err:
        print(f"openenv-train replay: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        for d in report.differences[:50]:
            print(
                f"{d.env} task {d.task} sample {d.sample} (seed {d.seed}): stored reward "
                f"{d.stored:+g}, replayed {d.replayed if d.replayed is None else format(d.replayed, '+g')}"
                f"{' (' + d.why + ')' if d.why else ''}"
            )
        if len(report.differences) > 50:
            print(f"... and {len(report.differences) - 50} more (--json lists all)")
        print(f"replayed {report.episodes} episodes: {len(report.differences)} reward(s) differ")
    return 1 if report.differences else 0


def add_eval_arguments(p: argparse.ArgumentParser) -> None:
    """The pass@k flags of ``openenv-train eval``."""
    p.add_argument(
        "--k",
        type=int,
        default=None,
        help="sample K episodes per task and report pass@k and mean@k per env (with --tasks)",
    )
    p.add_argument("--tasks", type=int, default=64, help="seeded tasks per env (with --k)")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (--k)")
    p.add_argument(
        "--threshold", type=float, default=0.0, help="a sample passes when its reward is above this"
    )
    p.add_argument("--env", action="append", default=None, help="only this env of the run (--k)")
    p.add_argument("--json", action="store_true", help="print the pass@k report as JSON (--k)")
    p.add_argument("--served-model", default="default", help="model name at an endpoint URL")
    p.add_argument("--tokenizer", default=None, help="the endpoint model's tokenizer folder")
    p.add_argument("--max-turns", type=int, default=16, help="turns per episode (endpoint URL)")
    p.add_argument("--max-new-tokens", type=int, default=256, help="tokens a turn (endpoint URL)")
    p.add_argument(
        "--max-episode-tokens", type=int, default=4096, help="tokens an episode (endpoint URL)"
    )
    p.add_argument(
        "--trajectories",
        default=None,
        metavar="OUT.jsonl",
        help="where the eval episodes go (--k; default RUN/eval/trajectories_kK.jsonl)",
    )
    p.add_argument(
        "--result",
        default=None,
        metavar="OUT.json",
        help="where the EvalResult (scores and their parameters) goes "
        "(--k; default RUN/eval/result_kK.json)",
    )


def register(sub: Any) -> None:
    """Add the ``replay`` subcommand to the ``openenv-train`` parser."""
    p = sub.add_parser(
        "replay", help="replay stored eval trajectories against the env; report differing rewards"
    )
    p.add_argument("trajectories", help="a JSONL file written by `openenv-train eval --k`")
    p.add_argument(
        "--app",
        action="append",
        metavar="ENV=module:app",
        help="replay ENV on a local server of this app (an env variant) instead of the stored one",
    )
    p.add_argument(
        "--url", action="append", metavar="ENV=URL", help="replay ENV on this running server"
    )
    p.add_argument("--tolerance", type=float, default=1e-9, help="largest difference ignored")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_replay)
