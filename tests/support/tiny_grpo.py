"""The GRPOConfig of the short CPU training tests: 2 steps, groups of 4, no checkpoints, quiet.

One place for the settings a tiny model on a CPU needs (``use_cpu``, no bf16, no gradient
checkpointing); each test passes what it checks on top (``max_completion_length``, ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def cpu_grpo_config(tmp_path: Path, **extra: Any) -> Any:
    from trl import GRPOConfig

    settings: dict[str, Any] = {
        "output_dir": str(tmp_path / "trainer"),
        "max_steps": 2,
        "num_generations": 4,
        "per_device_train_batch_size": 8,
        "learning_rate": 1e-2,
        "beta": 0.0,
        "use_cpu": True,
        "bf16": False,
        "gradient_checkpointing": False,
        "report_to": "none",
        "save_strategy": "no",
        "logging_steps": 1,
        "disable_tqdm": True,
    }
    return GRPOConfig(**{**settings, **extra})
