"""GRPO guess-the-number: a tiny model learns a multi-turn search through TRL's environment_factory.

config -> guess_number_env servers -> tiny Llama + word-level tool tokenizer (or a saved folder)
-> chat-template warm-up on random guesses (no strategy) -> greedy evals beside the random /
random-consistent / binary-search baselines on the same fresh games -> the env's MCP tool
``guess`` becomes a TRL environment class (``make_environment_class``; one WebSocket session per
instance, the env owns the reward) -> ``GRPOTrainer(environment_factory=...)`` -> train -> save.
The run's lifecycle (run folder, Ctrl-C, checkpoints, --resume, best weights, curve.png,
summary.json) is ``openenv_train.training.lifecycle``; everything lands in ``runs/<name>/``.

Run: ``openenv-train train configs/grpo_guess_number_cpu.yaml``.
"""

from __future__ import annotations

import sys
from typing import Any

from openenv_train.rollout.episode import EpisodeRecorder
from openenv_train.training.grpo import grpo_args, start_servers, trainer_class
from openenv_train.training.lifecycle import finish, main, open_run, train
from openenv_train.training.model import apply_lora, load_model, warm_up
from openenv_train.training.periodic_evals import Evals, EvalSpec

from .config import RecipeConfig, load_config
from .evaluate import COLUMNS, VALIDATION_OFFSET, baselines, evaluate_model
from .tool_model import TOOL_TEMPLATES, corpus, random_conversation

RESET_KEYS = ("seed", "low", "high", "max_turns", "show_range")


def run(cfg: RecipeConfig) -> dict[str, Any]:
    """Train and evaluate as ``cfg`` says; returns the summary also written to summary.json."""
    g, ev = cfg.game, cfg.eval
    with open_run(cfg) as run:  # runs/<name>/, seeds, Ctrl-C, metrics.jsonl
        servers, urls = start_servers(cfg)
        if servers is not None:
            run.close_at_end(servers.stop)
        words = corpus(g.low, g.high, g.max_turns, g.show_range)
        # a saved real chat model (Qwen3, Llama 3) keeps its own template: TRL parses its calls
        real = cfg.model.path is not None and has_real_chat_template(cfg.model.path)
        model, tokenizer = load_model(
            cfg, corpus=words, tokenizer_attrs=None if real else TOOL_TEMPLATES
        )
        if not run.resume:
            guesses = cfg.model.warmup_guesses

            def conversation(rng: Any) -> list[dict[str, Any]]:
                return random_conversation(rng, g.low, g.high, g.max_turns, g.show_range, guesses)

            tools = tool_schemas(environment_class(urls)) if real else None  # as TRL renders them
            log = run.metrics.write
            warm_up(
                model, tokenizer, cfg.model, cfg.seed, log, conversation, chat=True, tools=tools
            )
        model = apply_lora(model, tokenizer, cfg, run.path, resume=run.resume)  # lora.r > 0

        # greedy play of fresh seeded games in-process, beside the baselines on the same games
        val_seed = ev.seed + VALIDATION_OFFSET  # the curve's games, apart from the final ones

        def greedy(
            live: Any, validation: bool, recorder: EpisodeRecorder | None
        ) -> dict[str, float]:
            # TRL's environment_factory games: no episode loop for a recorder to watch
            n, seed = (ev.periodic_games, val_seed) if validation else (ev.games, ev.seed)
            return evaluate_model(
                live, tokenizer, n, seed, g.low, g.high, g.max_turns, g.show_range
            )

        evals = Evals(
            run,
            model,
            tokenizer,
            EvalSpec(
                greedy,
                score_key="mean_reward",
                columns=COLUMNS,
                table_title=f"{{}} ({ev.games} fresh games, greedy)",
                line="solved {solve_rate:.1%}, mean guesses {mean_guesses:.2f}",
                status={"solved": "solve_rate", "guesses": "mean_guesses"},
                panels=(
                    ("solve_rate", "solve rate"),
                    ("mean_guesses", "mean guesses (solved games)"),
                ),
                curve_title=f"GRPO guess-the-number {g.low}..{g.high}, {g.max_turns} turns ({cfg.name}): greedy, {ev.periodic_games} validation games",
                baselines=baselines(ev.games, ev.seed, g.low, g.high, g.max_turns),
                validation_baselines=baselines(
                    ev.periodic_games, val_seed, g.low, g.high, g.max_turns
                ),
                progress_fields=("reward",),
                episodes_per_step=cfg.grpo.per_device_train_batch_size,
            ),
        )
        evals.begin()  # the eval before training (or, resuming, the run so far)

        trainer = trainer_class(cfg)(
            model=model,
            processing_class=tokenizer,
            args=grpo_args(
                cfg,
                run.path,
                max_tool_calling_iterations=g.max_turns,
                generation_kwargs={"max_new_tokens": cfg.grpo.max_new_tokens_per_turn},
            ),
            train_dataset=games_dataset(cfg),
            environment_factory=environment_class(urls),
            callbacks=[run.stop, *evals.callbacks()],
        )
        train(run, trainer, evals)
    return finish(run, evals, trainer, tokenizer)


def tool_schemas(env_class: type) -> list[dict[str, Any]]:
    """The JSON schema TRL gives the chat template for the env class's ``guess`` tool."""
    from transformers.utils import get_json_schema

    return [get_json_schema(env_class.guess)]


def has_real_chat_template(path: str) -> bool:
    from openenv_train.policy.chat_models import family_of
    from openenv_train.policy.tiny import load_tiny_tokenizer

    return family_of(load_tiny_tokenizer(path).chat_template) is not None


def games_dataset(cfg: RecipeConfig) -> Any:
    """One row per training game: its ``reset`` options (seeded apart from the eval games)."""
    from datasets import Dataset

    g, gr = cfg.game, cfg.grpo
    rows = gr.max_steps * gr.per_device_train_batch_size // gr.num_generations + 64
    first = cfg.seed * 10_000_000
    return Dataset.from_dict(
        {
            "prompt": [[{"role": "user", "content": ""}]] * rows,  # reset() appends the env's text
            "seed": [first + i for i in range(rows)],
            "low": [g.low] * rows,
            "high": [g.high] * rows,
            "max_turns": [g.max_turns] * rows,
            "show_range": [g.show_range] * rows,
        }
    )


def environment_class(urls: list[str]) -> type:
    """The TRL environment class: the server's ``guess`` tool as a method, the env's reward; an
    episode in which the model never called the tool scores 0 (its own failure, not the env's)."""
    from guess_number_env import GuessNumberEnv

    from openenv_train.training import make_environment_class

    base = make_environment_class(
        urls,
        name="GuessNumberTools",
        client_cls=GuessNumberEnv,
        reset_keys=RESET_KEYS,
        render_reset=lambda result: result.observation.text,
    )

    class GuessNumberEnvironment(base):  # type: ignore[misc, valid-type]
        def get_reward(self) -> float:
            reward = super().get_reward()
            return 0.0 if reward is None else reward

    return GuessNumberEnvironment


if __name__ == "__main__":
    sys.exit(main(run, load_config))
