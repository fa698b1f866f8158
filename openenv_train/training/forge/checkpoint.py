"""A forge-style run's checkpoint: ``trainer/checkpoint-<step>/`` in the run folder, the latest only.

``trainer_state.pt`` is the trainer actor's whole state (``TrainerActor.save_state``: weights,
AdamW, lr schedule, entropy control, step); ``loop.json`` the controller's counts (episodes,
rollouts, dropped groups). The replay buffer is not kept: it holds rows of the last ``off_by_n``
policy versions only, and a resumed run refills it from the restored weights. The folder is
written under a temporary name and renamed, so a checkpoint is whole or absent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

STATE = "trainer_state.pt"
LOOP = "loop.json"


async def save_checkpoint(
    trainer: Any, checkpoints: Path, step: int, counts: dict[str, Any]
) -> Path:
    """``checkpoints/checkpoint-<step>`` from the trainer actor and ``counts``; older ones removed."""
    checkpoints.mkdir(parents=True, exist_ok=True)
    final = checkpoints / f"checkpoint-{step}"
    tmp = checkpoints / f"tmp-checkpoint-{step}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    await trainer.save_state.call_one(str(tmp / STATE))
    (tmp / LOOP).write_text(json.dumps({**counts, "step": step}))
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    for old in checkpoints.glob("checkpoint-*"):
        if old != final:
            shutil.rmtree(old, ignore_errors=True)
    return final


async def load_checkpoint(trainer: Any, checkpoint: str | Path) -> dict[str, Any]:
    """Restore the trainer actor from ``checkpoint``; returns the loop's counts (``step`` included)."""
    checkpoint = Path(checkpoint)
    step = await trainer.load_state.call_one(str(checkpoint / STATE))
    counts = json.loads((checkpoint / LOOP).read_text())
    if counts["step"] != step:
        raise ValueError(f"{checkpoint}: loop.json says step {counts['step']}, the trainer {step}")
    return counts
