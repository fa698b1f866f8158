"""Start-time checks: every mistake a config can hold fails before the run folder or the model
exists, in one line that names the key and the fix (no torch, no transformers imported here).

Two moments: at load, what the config names must import here (``check_reporters``,
``import_target``, called by ``RunConfig.check_start``); when the run starts
(``lifecycle.open_run``), :func:`start_checks` reaches the filesystem and the servers: the model
folder, and every ``base_urls`` server answering. The schema itself does no I/O."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator

from .errors import ConfigError as ConfigError

if TYPE_CHECKING:
    from .config import RunConfig


#: ``report_to`` backends transformers knows, with the package each one imports and the command
#: that installs it.
REPORTERS: dict[str, tuple[tuple[str, ...], str]] = {
    "tensorboard": (("tensorboard", "tensorboardX"), "pip install 'openenv-train[tensorboard]'"),
    "wandb": (("wandb",), "pip install wandb (then `wandb login`)"),
    "mlflow": (("mlflow",), "pip install mlflow"),
    "trackio": (("trackio",), "pip install trackio"),
    "comet_ml": (("comet_ml",), "pip install comet_ml"),
    "neptune": (("neptune",), "pip install neptune"),
    "clearml": (("clearml",), "pip install clearml"),
    "codecarbon": (("codecarbon",), "pip install codecarbon"),
    "dvclive": (("dvclive",), "pip install dvclive"),
    "swanlab": (("swanlab",), "pip install swanlab"),
    "azure_ml": (("azureml",), "pip install azureml-sdk"),
}


def normalize_report_to(value: Any) -> list[str]:
    """``report_to`` as a list: a single name (``tensorboard``) becomes ``[tensorboard]``; ``none``,
    ``null`` and ``[]`` mean no backend. Raises ``ValueError`` on anything else."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [] if value.strip().lower() in ("", "none") else [value.strip()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValueError(
            f"report_to: {value!r} is not a list of backend names; write e.g. [tensorboard]"
        )
    return [v for v in value if v.lower() != "none"]


#: The type of a config's ``report_to`` key: a list of backend names, a single name accepted.
ReportTo = Annotated[list[str], BeforeValidator(lambda v: normalize_report_to(v))]


def check_reporters(names: list[str]) -> None:
    """Each name is a backend transformers knows and its package is installed."""
    for name in names:
        if name not in REPORTERS:
            raise ValueError(
                f"report_to: unknown backend {name!r}; use one of {sorted(REPORTERS)} "
                "(metrics.jsonl and curve.png are always written)"
            )
        modules, fix = REPORTERS[name]
        if not any(importlib.util.find_spec(m) is not None for m in modules):
            raise ValueError(
                f"report_to: {name!r} needs the {modules[0]} package, which is not installed; "
                f"{fix}, or remove it from report_to"
            )


def import_target(target: str, key: str, example: str) -> Any:
    """The object ``module:attribute`` names, importing the module with the working directory on
    the path (as uvicorn does); ``ValueError`` naming ``key`` when it cannot be found."""
    module, _, attr = target.partition(":")
    if not module or not attr:
        raise ValueError(f"{key}: {target!r} is not 'module:attribute'; write e.g. {example}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name is None or not module.startswith(err.name):
            raise ValueError(
                f"{key}: importing {module!r} failed: {err}; install what it needs"
            ) from None
        raise ValueError(
            f"{key}: no module named {err.name!r} (from {target!r}); check the spelling, "
            "`pip install -e` the env package or run from the folder that holds it"
        ) from None
    obj: Any = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(
                f"{key}: module {module!r} has no attribute {attr!r}; check the spelling "
                f"(e.g. {example})"
            )
        obj = getattr(obj, part)
    return obj


def hub_reachable(timeout: float = 3.0) -> bool:
    """The model hub answers a TCP connect within ``timeout`` seconds (``HF_HUB_OFFLINE``: no)."""
    import socket
    from urllib.parse import urlsplit

    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    url = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    try:
        with socket.create_connection((url.hostname or "", url.port or 443), timeout=timeout):
            return True
    except OSError:
        return False


def check_hub_model(repo_id: str, key: str = "model.path") -> None:
    """A hub model is in the local cache or the hub can be reached: fail in seconds, in one line,
    instead of after the download's retries."""
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(repo_id, "config.json")
    except ValueError as err:  # not a repo id at all
        raise ValueError(f"{key}: {repo_id!r} is not a hub id ({err}); give org/name") from None
    if isinstance(cached, str) or hub_reachable():
        return
    raise ValueError(
        f"{key}: hub model {repo_id!r} is not in the local cache and the hub cannot be reached "
        "(offline, or HF_HUB_OFFLINE set); download it where there is a network "
        f"(`huggingface-cli download {repo_id}`) or give a folder saved with save_pretrained"
    )


def start_checks(cfg: RunConfig, base: Path | None = None) -> None:
    """What the run needs from outside the config, checked when it starts (``open_run``), before
    the run folder exists: the model folder (a relative ``model.path`` resolves against ``base``,
    default the working directory) and every ``base_urls`` server answering (the env section's,
    each mixture member's). Raises :class:`ConfigError` naming the key and the fix."""
    check_model_folder(cfg, Path.cwd() if base is None else base)
    env = getattr(cfg, "env", None)
    for section in [env, *(getattr(env, "mixture", None) or [])]:
        urls = getattr(section, "base_urls", None)
        if urls:
            check_servers_answer(list(urls))


def check_model_folder(cfg: RunConfig, base: Path | None = None) -> None:
    """Fail now (not after warm-up) on a model folder that is not there; a relative
    ``model.path`` resolves against ``base`` (and is stored resolved)."""
    model = getattr(cfg, "model", None)
    path = getattr(model, "path", None)
    if model is None or not path or getattr(model, "hub", False):
        return  # a hub model is checked when the run starts (training/model.py)
    p = Path(path) if Path(path).is_absolute() or base is None else base / path
    if not p.is_dir() or not (p / "config.json").is_file():
        keys = type(model).model_fields
        hub = ", set model.hub: true for a hub id" if "hub" in keys else ""
        tiny = ", or null to build the tiny model" if "tiny" in keys else ""
        raise ConfigError(
            f"model.path: {path!r} is not a model folder (no config.json at {p}); give a folder "
            f"saved with save_pretrained{hub}{tiny}"
        )
    model.path = str(p)


def check_servers_answer(urls: list[str]) -> None:
    """``env.base_urls``: every server answers ``GET /health`` now, not as an all-zero eval and a
    dropped-groups traceback after the warm-up."""
    from openenv_train.runtime.health import probe

    for url in urls:
        status, _, what = probe(url, timeout=5.0)
        if status != 200:
            raise ConfigError(
                f"env.base_urls: {url} does not answer ({what}); start the env server there "
                "(openenv-train serve ...) or remove env.base_urls to let the run start its own"
            )
