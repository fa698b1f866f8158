"""The run folder's lifecycle: made only when the start succeeded, removed again when the start
fails; Ctrl-C / SIGTERM finish the current step and keep the work; ``--resume`` continues.

First Ctrl-C (or SIGTERM) during training: stop after the current optimizer step, save a trainer
checkpoint, the best weights so far, the curve and ``summary.json`` marked interrupted. A second
Ctrl-C stops at once (the last periodic checkpoint and ``best/`` remain). Outside training a
signal interrupts at once.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from transformers import TrainerCallback

console = Console(stderr=True)


class RunFolderError(ValueError):
    """``--resume`` of a run that is not there (names the folder and the fix)."""


class RunFolder:
    """``runs/<name>/`` of one run: ``config.json``, ``metrics.jsonl``, ``trainer/`` checkpoints,
    ``best/``, ``model/``, ``curve.png``, ``summary.json``."""

    def __init__(self, path: Path, *, resume: bool = False) -> None:
        self.path = Path(path)
        self.resume = resume
        self.created = False
        self.started = False  # the first optimizer step began: keep the folder from now on

    def check(self) -> None:
        """Before any work: a resumed run must have a checkpoint to continue from."""
        if self.resume and self.last_checkpoint() is None:
            raise RunFolderError(
                f"--resume: {self.path} has no trainer checkpoint to continue from "
                f"({self.path / 'trainer'}/checkpoint-N); train without --resume to start it"
            )

    def create(self, config_json: str) -> None:
        if not self.resume:
            self.created = not self.path.exists()
            self.path.mkdir(parents=True, exist_ok=True)
            (self.path / "config.json").write_text(config_json)
            for stale in ("trainer", "best", "summary.json"):  # from an earlier run of the name
                p = self.path / stale
                shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)

    def discard(self) -> None:
        """A start that failed before training leaves no half-made folder behind."""
        if self.created and not self.started and self.path.is_dir():
            shutil.rmtree(self.path, ignore_errors=True)

    def last_checkpoint(self) -> str | None:
        from transformers.trainer_utils import get_last_checkpoint

        trainer = self.path / "trainer"
        return get_last_checkpoint(str(trainer)) if trainer.is_dir() else None

    def metrics_rows(self) -> list[dict[str, Any]]:
        path = self.path / "metrics.jsonl"
        if not path.is_file():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class GracefulStop(TrainerCallback):
    """The first SIGINT/SIGTERM while training asks the trainer to save and stop at the end of the
    current step; the second (or one outside training) raises ``KeyboardInterrupt`` at once."""

    def __init__(self) -> None:
        self.requested = False
        self.training = False

    def _handler(self, signum: int, frame: Any) -> None:
        if self.training and not self.requested:
            self.requested = True
            name = signal.Signals(signum).name
            console.print(
                f"\n{name}: finishing this step, then saving (press Ctrl-C again to stop at once)"
            )
            return
        raise KeyboardInterrupt

    @contextlib.contextmanager
    def installed(self) -> Iterator[GracefulStop]:
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        old = {s: signal.signal(s, self._handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for s, h in old.items():
                signal.signal(s, h)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.training = True

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if self.requested:
            control.should_save = True
            control.should_training_stop = True

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.training = False


@contextlib.contextmanager
def signals_ignored() -> Iterator[None]:
    """While the work is being saved, further Ctrl-C presses cannot cut the files in half."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
