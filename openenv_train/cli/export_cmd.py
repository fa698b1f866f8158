"""``openenv-train export RUN --merge [--out DIR]``: a LoRA run's adapter merged into its base.

A run trained with ``lora.r > 0`` saves only the adapter in ``RUN/model`` and its base in
``RUN/base``; vLLM, other tools and plain ``from_pretrained`` want one folder of weights. Without
LoRA ``RUN/model`` already is that folder, and export says so.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def export_run(run: str | Path, out: str | Path | None = None) -> Path:
    """Write ``RUN/merged`` (or ``out``): ``RUN/model``'s adapter merged into ``RUN/base``."""
    from ..policy.lora import is_adapter_dir, load_adapter_model
    from ..policy.tiny import load_tiny_tokenizer

    run = Path(run)
    model_dir = run / "model" if (run / "model").is_dir() else run
    if not model_dir.is_dir():
        raise ValueError(f"RUN: {run} is not a run folder (runs/<name> with a model/ inside)")
    if not is_adapter_dir(model_dir):
        raise ValueError(
            f"RUN: {model_dir} holds full weights already (the run had lora.r: 0); use it as is"
        )
    target = Path(out) if out else run / "merged"
    model = load_adapter_model(model_dir, merge=True)
    model.save_pretrained(target)
    load_tiny_tokenizer(model_dir).save_pretrained(target)
    return target


def cmd_export(args: argparse.Namespace) -> int:
    if not args.merge:
        print("openenv-train export: error: --merge: say how to export (the one way for now)")
        return 2
    try:
        path = export_run(args.run, args.out)
    except (ValueError, FileNotFoundError) as err:
        print(f"openenv-train export: error: {err}")
        return 2
    print(f"wrote {path} (adapter merged into its base); next: openenv-train eval {path}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("export", help="write a LoRA run's adapter merged into its base model")
    p.add_argument("run", help="run folder (runs/<name>) or its model/ folder")
    p.add_argument("--merge", action="store_true", help="merge the adapter into the base weights")
    p.add_argument("--out", default=None, help="folder to write (default RUN/merged)")
    p.set_defaults(func=cmd_export)
