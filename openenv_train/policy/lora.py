"""LoRA adapters (peft) on a policy model: wrap, the trainable state a weight sync sends, and
loading or merging an adapter folder that a run saved beside its base.

A LoRA run folder holds ``model/`` (``adapter_config.json`` + ``adapter_model.safetensors`` + the
tokenizer) and ``base/`` (the base weights the adapter was trained on: after the warm-up, which
trains every weight, so not the starting checkpoint). :func:`load_model_dir` reads either a plain
model folder or such an adapter folder (merged on load), so evals and exports need not care.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ADAPTER_CONFIG = "adapter_config.json"


def lora_config(r: int, alpha: float, dropout: float, target_modules: Any) -> Any:
    """A causal-LM ``peft.LoraConfig``; ``target_modules`` a list of names or ``"all-linear"``."""
    from peft import LoraConfig

    return LoraConfig(
        r=r,
        lora_alpha=alpha,
        lora_dropout=dropout,
        target_modules=target_modules,
        task_type="CAUSAL_LM",
        bias="none",
    )


def wrap(model: Any, config: Any) -> Any:
    """``model`` with fresh adapters (B = 0: it plays exactly as before); base weights frozen."""
    from peft import get_peft_model

    if is_peft(model):
        raise ValueError("the model already carries LoRA adapters; set lora.r: 0 or load its base")
    return get_peft_model(model, config)


def is_peft(model: Any) -> bool:
    try:
        from peft import PeftModel
    except ImportError:
        return False
    return isinstance(model, PeftModel)


def trainable_state(model: Any) -> tuple[dict[str, Any], bool]:
    """``(CPU copy of the weights a sync must send, partial)``: the whole ``state_dict`` in full
    fine-tuning; only the trainable (adapter) tensors when some weights are frozen (``partial``:
    load with ``strict=False``). Names are the model's own, so a deep copy loads them as is."""
    params = dict(model.named_parameters())
    trainable = {k for k, p in params.items() if p.requires_grad}
    if trainable and len(trainable) < len(params):
        return {k: params[k].detach().to("cpu", copy=True) for k in sorted(trainable)}, True
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}, False


def load_state(model: Any, state: dict[str, Any], partial: bool) -> None:
    """Load what :func:`trainable_state` made; a partial state must name only existing tensors."""
    result = model.load_state_dict(state, strict=not partial)
    if partial and result.unexpected_keys:
        raise ValueError(f"adapter sync: unknown tensors {result.unexpected_keys[:3]}")


def state_bytes(state: dict[str, Any]) -> int:
    return sum(v.numel() * v.element_size() for v in state.values())


def is_adapter_dir(path: str | Path) -> bool:
    return (Path(path) / ADAPTER_CONFIG).is_file()


def base_dir_of(adapter_dir: str | Path) -> Path | str:
    """The base an adapter folder was trained on: the run's ``base/`` beside it, else the
    ``base_model_name_or_path`` its config names (a folder or a hub id)."""
    adapter_dir = Path(adapter_dir)
    sibling = adapter_dir.parent / "base"
    if (sibling / "config.json").is_file():
        return sibling
    named = json.loads((adapter_dir / ADAPTER_CONFIG).read_text()).get("base_model_name_or_path")
    if not named:
        raise FileNotFoundError(
            f"{adapter_dir} is a LoRA adapter but its base is missing: expected {sibling} (saved by "
            f"the run) or a folder or hub id in {ADAPTER_CONFIG}'s base_model_name_or_path"
        )
    return Path(named) if (Path(named) / "config.json").is_file() else named


def load_adapter_model(adapter_dir: str | Path, *, merge: bool = True, dtype: Any = None) -> Any:
    """The base of ``adapter_dir`` with the adapter loaded: merged into plain weights (a
    ``transformers`` model again) unless ``merge`` is False."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(
        base_dir_of(adapter_dir), dtype=dtype or torch.float32
    )
    model = PeftModel.from_pretrained(base, str(adapter_dir))
    return model.merge_and_unload() if merge else model


def save_merged(model: Any, tokenizer: Any, out: str | Path) -> Path:
    """Save ``model`` (merged first when it carries adapters) and ``tokenizer`` as one plain folder."""
    out = Path(out)
    if is_peft(model):
        import copy

        model = copy.deepcopy(model).merge_and_unload()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
