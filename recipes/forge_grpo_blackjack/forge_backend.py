"""``backend: forge``: forge's own vLLM ``Generator`` and ``TitanTrainer`` (GPUs; UNTESTED here).

torchforge is not on PyPI and needs >= 3 NVIDIA GPUs, so this path has never run on the machines
this project is developed on. It follows forge's GRPO app: a provisioner, the Generator as a
service (``.route()`` per prompt), TitanTrainer as an actor with our GRPO loss (``forge_loss``),
torchstore for the weight push (``trainer.push_weights.call(v)`` then
``generator.update_weights.fanout(v)``). Our replay buffer actor and our rollouts (multi-turn
episodes on our env servers through the Generator service) are the same as on the CPU path; the
rollouts run in the controller, where forge's service handle is known to work.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from openenv_train.training.config import ConfigError

from .app import Actors
from .config import ForgeRecipeConfig


def _endpoints(obj: Any, *names: str) -> Any:
    """``obj``'s coroutine methods callable as ``x.<name>.call_one(...)`` (an actor's call style)."""
    return SimpleNamespace(**{n: SimpleNamespace(call_one=getattr(obj, n)) for n in names})


async def spawn_forge(cfg: ForgeRecipeConfig, graph: Any, model: str, urls: list[str]) -> Actors:
    try:
        import torchstore as ts  # type: ignore[import-not-found]
        from forge.actors.generator import Generator  # type: ignore[import-not-found]
        from forge.actors.trainer import TitanTrainer  # type: ignore[import-not-found]
        from forge.controller.provisioner import init_provisioner  # type: ignore[import-not-found]
    except ImportError as err:
        raise RuntimeError(
            f"backend: forge needs torchforge (and its torchstore, vLLM, TorchTitan) installed from "
            f"source on a GPU machine ({err}); use backend: monarch on a CPU"
        ) from None
    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.training.forge import Rollouts, forge_loss, load_tokenizer
    from openenv_train.training.forge.actors import ReplayBufferActor

    f, s, a = cfg.forge, cfg.services, cfg.actors
    provisioner = await init_provisioner()
    generator = await Generator.options(**s.generator.model_dump()).as_service(**f.generator)
    loss = forge_loss(beta=cfg.trainer.loss.beta, epsilon=cfg.trainer.loss.epsilon)
    trainer = await TitanTrainer.options(**a.trainer.model_dump()).as_actor(**f.trainer, loss=loss)
    buffer = await ReplayBufferActor.options(**a.replay_buffer.model_dump()).as_actor(
        cfg.local_batch_size, max_policy_age=cfg.off_by_n, generator_logprobs=False
    )
    hosts = provisioner.get_host_mesh(a.trainer.mesh_name or "trainer")
    await ts.initialize(
        mesh=hosts.spawn_procs(per_host={"procs": a.trainer.procs}),
        strategy=ts.LocalRankStrategy(),
    )
    r = cfg.rollout
    rollouts = Rollouts(
        BlackjackTextSpec(seed=cfg.seed, invalid_action_reward=r.invalid_action_reward),
        urls,
        generator,  # a forge service: GeneratorPolicy calls generator.generate.route(prompt)
        load_tokenizer(model),
        rollout={"max_turns": r.max_turns, "max_concurrency": r.max_concurrency},
        request_len=cfg.max_req_tokens,
        response_len=cfg.max_res_tokens,
    )

    async def push(version: int) -> None:
        await trainer.push_weights.call(version)
        await generator.update_weights.fanout(version)

    graph.forge_shutdown = True  # forge's provisioner owns these processes (see shutdown_forge)
    return Actors(
        generator=_endpoints(
            SimpleNamespace(get_version=lambda: generator.get_version.route()), "get_version"
        ),
        trainer=trainer,
        replay_buffer=buffer,
        rollouts=[_endpoints(rollouts, "rollout", "close")],
        push=push,
    )


async def shutdown_forge() -> None:
    from forge.controller.provisioner import shutdown  # type: ignore[import-not-found]

    await shutdown()


def run_forge(cfg: ForgeRecipeConfig, train: Any) -> dict[str, Any]:
    """forge's own actors (GPUs; untested here): ``train`` (the recipe's actor-graph run) with
    rollout rewards logged, no local evals. Ctrl-C / SIGTERM finish the step; forge's TitanTrainer
    keeps its own checkpoints (``forge.trainer.checkpoint``), so there is no ``--resume`` here."""
    from openenv_train.client.sync import run_blocking
    from openenv_train.runtime import start_local_servers
    from openenv_train.training import JsonlMetricsCallback
    from openenv_train.training.lifecycle import GracefulStop, RunFolder, end_run, write_summary

    if cfg.resume:
        raise ConfigError("--resume: backend: forge resumes through forge.trainer.checkpoint")
    folder, stop = RunFolder(cfg.run_dir), GracefulStop()
    folder.create(cfg.model_dump_json(indent=2))
    metrics = JsonlMetricsCallback(folder.path / "metrics.jsonl")

    async def on_step(step: int, m: dict[str, Any], state: Any) -> None:
        metrics.write("train", step, {**m, "reward_mean": state.last_rollout.get("reward_mean")})

    hooks = {
        "on_step": on_step,
        "log": metrics.write,
        "stop": lambda: stop.requested,
        "saves": False,
    }
    with stop.installed(), start_local_servers(cfg.env.app, cfg.env.num_servers) as servers:
        stop.on_train_begin(None, None, None)
        state, final = run_blocking(
            train(cfg, Path(cfg.forge.model), servers.base_urls, hooks, folder.path)
        )
    summary = {"name": cfg.name, "backend": "forge", "steps": state.step,
               "episodes": state.episodes, "buffer": final["buffer"], "interrupted": stop.requested}  # fmt: skip
    write_summary(folder.path, summary)
    end_run(folder.path, interrupted=stop.requested)
    return summary
