"""One training run's lifecycle, as plain functions every recipe calls in order::

    with open_run(cfg) as run:        # run folder, seeds, Ctrl-C handling, metrics.jsonl
        ...                           # servers (run.close_at_end), model, evals, trainer
        train(run, trainer, evals)    # (resumes from the last checkpoint), then the final evals
    return finish(run, evals, trainer, tokenizer)   # model/, curve.png, summary.json, `next:`

The run folder is made only when the start succeeded and removed again when the start fails; a
fresh run replaces an earlier one's checkpoints; ``--resume`` continues from the last one.

First Ctrl-C (or SIGTERM) during training: stop after the current optimizer step, save a trainer
checkpoint, the best weights so far, the curve and ``summary.json`` marked interrupted. A second
Ctrl-C stops at once (the last periodic checkpoint and ``best/`` remain). Outside training a
signal interrupts at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from transformers import TrainerCallback

from ..runtime.signals import STOP_SIGNALS
from ..server.spans import setup_tracing
from .checks import start_checks
from .errors import RunFolderError as RunFolderError
from .trainer_metrics import serve_trainer_metrics

if TYPE_CHECKING:
    from .config import GRPORun
    from .periodic_evals import EvalResult, Evals

console = Console(stderr=True)
stdout = Console()  # the run's report: what was saved and the command to run next


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
    """The first SIGINT/SIGTERM/SIGHUP while training asks the trainer to save and stop at the end of the
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
        old = {s: signal.signal(s, self._handler) for s in STOP_SIGNALS}
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
    old = {s: signal.signal(s, signal.SIG_IGN) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@dataclass
class Run:
    """What :func:`open_run` hands a recipe: the config, the folder, the stop signal, the metrics
    log and the resources to close when the run ends (servers, rollout workers)."""

    cfg: GRPORun
    folder: RunFolder
    stop: GracefulStop
    metrics: Any  # JsonlMetricsCallback
    started: float
    restored: list[dict[str, Any]] = field(default_factory=list)  # metrics rows of a resumed run
    closing: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    @property
    def path(self) -> Path:
        return self.folder.path

    @property
    def resume(self) -> bool:
        return self.folder.resume

    def close_at_end(self, close: Callable[[], Any]) -> None:
        """Call ``close`` when the run ends however it ends (last registered, first closed)."""
        self.closing.callback(close)


@contextlib.contextmanager
def open_run(cfg: GRPORun) -> Iterator[Run]:
    """The run of ``cfg`` in ``cfg.run_dir`` (``cfg.resume``: continue it), seeded.

    First the checks that reach outside the config (``checks.start_checks``: the model folder,
    ``base_urls`` servers answering), before any folder exists. A failure before training began
    removes the folder again. Once training began, Ctrl-C
    (the second one, or one in the final evals) ends the ``with`` block and keeps the work:
    :func:`finish` saves it. The resources of :meth:`Run.close_at_end` are closed on the way out,
    where further Ctrl-C presses cannot cut them short.
    """
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from openenv_train.training import JsonlMetricsCallback, quiet_third_party

    quiet_third_party()
    import torch

    started = time.perf_counter()
    start_checks(cfg)
    folder = RunFolder(cfg.run_dir, resume=bool(getattr(cfg, "resume", False)))
    folder.check()
    if cfg.grpo.torch_threads:
        torch.set_num_threads(cfg.grpo.torch_threads)
    torch.manual_seed(cfg.seed)
    stop = GracefulStop()
    with stop.installed():
        closing = contextlib.ExitStack()
        try:
            folder.create(cfg.model_dump_json(indent=2))
            restored = folder.metrics_rows() if folder.resume else []
            metrics = JsonlMetricsCallback(folder.path / "metrics.jsonl", append=folder.resume)
            setup_tracing("openenv-train-trainer")  # OTLP export when OTEL_* asks for it
            port = getattr(cfg, "metrics_port", None)
            if port is not None:
                exporter = serve_trainer_metrics(port)
                closing.callback(exporter.close)
                console.print(f"trainer metrics: http://127.0.0.1:{exporter.port}/metrics")
            yield Run(cfg, folder, stop, metrics, started, restored, closing)
        except KeyboardInterrupt:
            if not folder.started:
                folder.discard()
                raise
            stop.requested = True  # training began: keep the work
        except BaseException:
            folder.discard()  # a start that failed leaves no run folder (kept once training began)
            raise
        finally:
            with signals_ignored():
                closing.close()


def train(run: Run, trainer: Any, evals: Evals) -> bool:
    """Train (from the last checkpoint when resuming), then the final evals unless stopped.
    True when the run went to its end."""
    evals.bind(trainer)
    run.folder.started = True
    trainer.train(resume_from_checkpoint=run.folder.last_checkpoint() if run.resume else None)
    if run.stop.requested:
        return False
    evals.after(trainer)
    return True


def finish(
    run: Run, evals: Evals, trainer: Any, tokenizer: Any, extra: Sequence[EvalResult] = ()
) -> dict[str, Any]:
    """Save ``model/`` (the best periodic weights, else the last), ``curve.png`` and
    ``summary.json`` (``extra``: the recipe's own eval results, each under its key); print what
    to run next. After Ctrl-C: re-raise ``KeyboardInterrupt``."""
    with signals_ignored():
        model_dir = run.path / "model"
        if run.stop.requested:
            evals.interrupted(trainer)
        trainer.save_model(str(model_dir))
        tokenizer.save_pretrained(str(model_dir))
        summary = evals.summary(
            model_dir,
            trainer.state.global_step,
            interrupted=run.stop.requested,
            checkpoint=run.folder.last_checkpoint(),
            extra=extra,
        )
    end_run(
        run.path,
        interrupted=run.stop.requested,
        next_step=f"next: openenv-train eval {model_dir}",
        config=run.cfg.source,
    )
    return summary


def write_summary(run_dir: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """``summary.json`` of the run (any JSON-able values; others as ``str``); returns ``summary``."""
    (Path(run_dir) / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary


def resume_command(run_dir: Path, config: str | None = None) -> str:
    """The command that continues ``run_dir``: its config as given (``config``: the YAML path and
    any ``--set`` flags), else the ``config.json`` the run folder keeps."""
    return f"openenv-train train {config or Path(run_dir) / 'config.json'} --resume {run_dir}"


def end_run(
    run_dir: Path, *, interrupted: bool, next_step: str = "", config: str | None = None
) -> None:
    """The run's last word, the same for every recipe: what to run next; or, after a stop
    request (the work is saved by now), the command that resumes it (``config``: the config as
    given), then ``KeyboardInterrupt`` so the command exits with status 130."""
    if interrupted:
        stdout.print(
            f"saved the work so far in {run_dir}; continue with `{resume_command(run_dir, config)}`"
        )
        raise KeyboardInterrupt
    stdout.print(next_step or f"done: {run_dir}")


def main(
    run: Callable[[Any], Any], load_config: Callable[[str], Any], argv: list[str] | None = None
) -> int:
    """``python -m recipes.<name>.train CONFIG``: 2 on a wrong call, 130 after Ctrl-C."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        module = getattr(sys.modules["__main__"].__spec__, "name", run.__module__)
        stdout.print(f"usage: python -m {module} CONFIG.yaml")
        return 2
    try:
        run(load_config(args[0]))
    except KeyboardInterrupt:
        return 130
    return 0
