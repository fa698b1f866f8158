"""The overlap producer in a child process: its own interpreter, so its own GIL.

A tiny model's training step and the rollout loop are both mostly Python (op dispatch, the
WebSocket client, episode bookkeeping). In one process they take turns on one GIL and overlap
little (measured on the demo config: 1.0x). Here the producer (``RolloutEngine`` + a private
``TransformersPolicy`` copy + env sessions) runs in a spawned child process: each request carries
the newest published weights (a CPU copy of what trains: the whole ``state_dict``, ~0.3 MB for
the demo model, or only a LoRA model's adapter tensors) and the prompts,
and the child answers with the finished ``RolloutBatch``. ``max_staleness`` requests are kept
outstanding, so the child always plays the next batch while the trainer computes.
"""

from __future__ import annotations

import copy
import multiprocessing as mp
import pickle
from collections import deque
from collections.abc import Sequence
from typing import Any

from ..core.auth import register_server_tokens, server_tokens
from ..policy.lora import load_state, trainable_state
from ..rollout.episode import RolloutConfig
from ..rollout.spec import TextEnvSpec
from .overlap import check_in_process
from .trainer_policy import config_for, tokenizer_of, unwrap_model


def _child(
    conn: Any,
    spec: Any,
    urls: list[str],
    tokens: dict[str, str],
    cfg: RolloutConfig,
    model: Any,
    tok: Any,
    g: int,
) -> None:
    """The producer process: play each requested batch, send it back; exceptions go back too.
    ``tokens``: the servers' own tokens, as the parent's clients use them."""
    import asyncio

    import torch

    register_server_tokens(tokens)

    from ..policy.transformers_policy import TransformersPolicy
    from ..rollout.engine import RolloutEngine
    from ..rollout.episode_runner import freeze_heap_once

    torch.set_num_threads(1)

    async def serve() -> None:
        policy = TransformersPolicy(model, tok, device=None, num_threads=1)
        engine = RolloutEngine(spec, policy, urls, cfg)
        loop = asyncio.get_running_loop()
        freeze_heap_once()  # this process's long-lived objects: model copy, engine
        try:
            while True:
                msg = await loop.run_in_executor(None, conn.recv)
                if msg[0] == "stop":
                    return
                _, version, state, prompts = msg
                if state is not None:  # (tensors, partial): a LoRA model sends its adapter only
                    load_state(model, *state)
                try:
                    batch = await engine.run(prompts, g)
                except Exception as exc:  # noqa: BLE001 - re-raised on the trainer's side
                    conn.send(("error", version, exc))
                    return
                conn.send(("batch", version, batch))
        finally:
            await engine.aclose()
            await policy.aclose()

    try:
        asyncio.run(serve())
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        pass


class ProcessProducer:
    """Plays batches ahead of the trainer in a child process (see module doc)."""

    def __init__(
        self, spec: TextEnvSpec, urls: Sequence[str], max_staleness: int, config: RolloutConfig
    ) -> None:
        self.spec, self.urls, self.max_staleness = spec, list(urls), max_staleness
        self.config = config  # aligned with the trainer's sampling settings at start
        self.proc: Any = None
        self.conn: Any = None
        self._latest: tuple[int, tuple[dict[str, Any], bool]] | None = None
        self._sent_version = -1
        self.prompts: list[Any] = []
        self._asked: deque[list[Any]] = deque()  # the prompts of each outstanding request

    @property
    def runner(self) -> None:
        return None  # the runner lives in the child process

    def start(self, trainer: Any, group_size: int) -> None:
        """Spawn the child with a CPU copy of the trainer's model and ask for the first batches."""
        check_in_process(trainer)
        model, tokenizer = unwrap_model(trainer), tokenizer_of(trainer)
        config = config_for(trainer, self.config)
        ctx = mp.get_context("spawn")  # fork is unsafe with torch and a running loop thread
        self.conn, child_conn = ctx.Pipe()
        own = copy.deepcopy(model).to("cpu").eval()
        for p in own.parameters():
            p.requires_grad_(False)
        self.proc = ctx.Process(
            target=_child,
            args=(
                child_conn,
                self.spec,
                self.urls,
                server_tokens(self.urls),
                config,
                own,
                tokenizer,
                group_size,
            ),
            name="openenv-train-rollout-producer",
            daemon=True,
        )
        try:
            self.proc.start()
        except (AttributeError, TypeError, pickle.PicklingError) as err:
            self.proc = None
            raise ValueError(
                f"overlap='process' sends the spec, model and tokenizer to a child process, and "
                f"one of them does not pickle ({err}); make them picklable (module-level classes, "
                "no lambdas) or pass overlap='thread'"
            ) from err
        finally:
            child_conn.close()
        for _ in range(self.max_staleness):
            self._request()

    def publish(self, model: Any, version: int, prompts: list[Any]) -> None:
        """The trainer's weights now (copied) and the prompts the next requests play."""
        self._latest = (version, trainable_state(model))
        self.prompts = list(prompts)

    def _request(self) -> None:
        assert self._latest is not None
        version, state = self._latest
        fresh = state if version > self._sent_version else None
        self.conn.send(("play", version, fresh, self.prompts))
        self._asked.append(self.prompts)
        self._sent_version = version

    def take(self) -> tuple[int, list[Any], Any]:
        """The oldest outstanding batch as ``(version, prompts, batch)``; a new request (with the
        newest weights) replaces it at once."""
        try:
            kind, version, payload = self.conn.recv()
        except EOFError:
            code = self.proc.exitcode if self.proc is not None else None
            raise RuntimeError(
                f"the rollout producer process died (exit code {code}); see its output above"
            ) from None
        if kind == "error":
            raise payload
        prompts = self._asked.popleft()
        self._request()
        return version, prompts, payload

    def close(self) -> None:
        if self.proc is None:
            return
        try:
            self.conn.send(("stop",))
        except (BrokenPipeError, OSError):
            pass
        self.proc.join(timeout=15)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(timeout=5)
        self.conn.close()
        self.proc = None
