"""The recipe's setup pieces: the tiny model after its format warm-up, the env servers, the progress bar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from .config import ForgeRecipeConfig

console = Console()


class Progress:
    """A rich progress bar over training steps with the latest reward, entropy and eval."""

    def __init__(self, cfg: ForgeRecipeConfig) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[status]}"),
            console=console,
        )
        self.task = self.bar.add_task(f"forge GRPO {cfg.name}", total=cfg.steps, status="")
        self.status: dict[str, str] = {}
        self.bar.start()

    def update(self, step: int, **values: float) -> None:
        self.status.update({k: f"{v:.3f}" for k, v in values.items()})
        self.bar.update(
            self.task, completed=step, status=" ".join(f"{k}={v}" for k, v in self.status.items())
        )

    def stop(self) -> None:
        self.bar.stop()


def prepare_model(cfg: ForgeRecipeConfig, out: Path, log: Any) -> Path:
    """Build (or load) the model, run the format warm-up, save it where every actor loads it."""
    from blackjack_env.text_spec import VOCABULARY, random_episode

    from openenv_train.policy.tiny import load_tiny_model, save_tiny_model
    from openenv_train.training.model import build_tiny, warm_up

    m = cfg.model
    if m.path is None:
        model, tokenizer = build_tiny(m.tiny, VOCABULARY)
    else:
        model, tokenizer = load_tiny_model(m.path)
    warm_up(model, tokenizer, m, cfg.seed, log, random_episode)
    return save_tiny_model(model, tokenizer, out / "init_model")


def start_servers(cfg: ForgeRecipeConfig) -> tuple[Any, list[str]]:
    """``(local server group or None, env URLs)``: ``env.base_urls`` or servers started here."""
    from openenv_train.runtime import start_local_servers

    if cfg.env.base_urls:
        return None, list(cfg.env.base_urls)
    servers = start_local_servers(
        cfg.env.app, cfg.env.num_servers, startup_timeout=cfg.env.startup_timeout_s
    )
    return servers, [s.base_url for s in servers]
