"""Env mixtures through TRL's ``environment_factory``: a real GRPOTrainer routes each row to the
env its ``environment`` column names (guess-the-number and echo servers on loopback), the tool
loop runs against both, and each env's reward lands under its own ``env/<name>/reward_mean``."""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from openenv_train.recipes.grpo_guess_number.tool_model import BOT, CHAT_TEMPLATE, DONE, corpus
from openenv_train.rollout.mixture_engine import env_metric

ECHO_WORDS = ("hello", "world", "mixture", "tools")
#: a response template for any one-argument tool: ``<call> NAME ARG VALUE <eos>``
RESPONSE_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": BOT,
    "fields": {
        "tool_calls": {
            "open_pattern": r"\s*<call>\s+(?P<name>\w+)\s+",
            "close_pattern": r"\s*<eos>\s*",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {"tag_pattern": r"(?P<key>\w+)\s+(?P<value>\S+)"},
            "transform": {
                "type": "function",
                "function": {"name": "{name}", "arguments": "{content}"},
            },
        },
        "content": {"close_pattern": r"\s*<eos>\s*", "content": "text"},
    },
}


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    from openenv_train.runtime import LocalProcessProvider

    with (
        LocalProcessProvider("guess_number_env.server.app:app", startup_timeout=120) as guess,
        LocalProcessProvider("echo_env.server.app:app", startup_timeout=120) as echo,
    ):
        yield {"guess_number": guess.base_url, "echo": echo.base_url}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": name, "arguments": arguments}}],
    }


def conversation(rng: random.Random) -> list[dict[str, Any]]:
    """A random episode of either env, for the format warm-up (no strategy)."""
    from openenv_train.recipes.grpo_guess_number.tool_model import random_conversation

    if rng.random() < 0.5:
        return random_conversation(rng, 1, 16, 5, True)
    word = rng.choice(ECHO_WORDS)
    return [
        {"role": "user", "content": ""},
        call("echo_message", message=word),
        {"role": "tool", "name": "echo_message", "content": word},
        {"role": "assistant", "content": DONE},
    ]


@pytest.mark.timeout(900)
def test_trl_routes_rows_to_their_env_and_logs_rewards_per_env(
    urls: dict[str, str], tmp_path: Any
) -> None:
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from openenv_train.policy.tiny import build_tiny_llama, build_word_tokenizer
    from openenv_train.recipes.grpo_guess_number.train import RESET_KEYS, environment_class
    from openenv_train.training import chat_warmup, make_environment_class, release_callback
    from openenv_train.training.factory_mixture import (
        env_reward_metrics,
        make_mixture_environment_factory,
        mixture_dataset,
    )

    torch.set_num_threads(1)
    echo_text = " ".join(("echo_message message", *ECHO_WORDS))
    tok = build_word_tokenizer(corpus=[*corpus(1, 16, 5, True, games=100), echo_text])
    tok.chat_template, tok.response_template = CHAT_TEMPLATE, RESPONSE_TEMPLATE
    model = build_tiny_llama(tok, seed=0)
    chat_warmup(model, tok, conversation, steps=60, batch_size=16, learning_rate=1e-2)

    resets: dict[str, list[int]] = defaultdict(list)  # env class -> the seeds of the rows it reset
    tool_calls: dict[str, int] = defaultdict(int)
    scored: list[tuple[str, float]] = []  # (env, reward) in the order TRL scores rows

    def counted(env: str, base: type) -> type:
        class Counted(base):  # type: ignore[misc, valid-type]
            def reset(self, **row: Any) -> str | None:
                assert "environment" not in row  # TRL's routing field, not a reset option
                resets[env].append(row["seed"])
                return super().reset(**row)

            def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
                tool_calls[env] += 1
                return super()._call_tool(name, arguments)

            def get_reward(self) -> float:
                reward = super().get_reward()
                scored.append((env, 0.0 if reward is None else reward))
                return scored[-1][1]

        return Counted

    echo = make_environment_class(urls["echo"], name="EchoTools")
    factory = make_mixture_environment_factory(
        {
            "guess_number": counted("guess_number", environment_class([urls["guess_number"]])),
            "echo": counted("echo", echo),
        }
    )
    assert [c.__name__ for c in factory.values()] == ["guess_number", "echo"]
    # the rows name the env for TRL's routing (TRL strips it) and carry guess_number's reset keys
    data = mixture_dataset(
        {"guess_number": 1.0, "echo": 1.0},
        64,
        seed=1,
        columns={"low": 1, "high": 16, "max_turns": 5, "show_range": True},
    ).add_column("seed", list(range(64)))
    assert set(RESET_KEYS) <= set(data.column_names)
    # the probe instance TRL makes per env is no episode; count what training plays
    # (16 rows of 2 generations per step: 8 prompts, so both envs are dealt)
    args = GRPOConfig(
        output_dir=str(tmp_path / "trainer"),
        max_steps=2,
        num_generations=2,
        per_device_train_batch_size=16,
        learning_rate=1e-3,
        beta=0.0,
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        max_completion_length=48,
        max_tool_calling_iterations=3,
        generation_kwargs={"max_new_tokens": 6},
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=True,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tok,
        args=args,
        train_dataset=data,
        environment_factory=factory,
        callbacks=[env_reward_metrics(list(factory)), release_callback(*factory.values())],
    )
    trainer.train()

    # every session an env class played was for a row naming that env (rows told apart by seed)
    named = dict(zip(data["seed"], data["environment"], strict=True))
    assert set(resets) == {"guess_number", "echo"}
    for env, seeds in resets.items():
        assert {named[s] for s in seeds} == {env}, (env, seeds)
    assert sum(len(seeds) for seeds in resets.values()) == 2 * 16
    by_env: dict[str, int] = defaultdict(int)
    for env, _ in scored:
        by_env[env] += 1
    assert dict(by_env) == {env: len(rows) for env, rows in resets.items()}
    assert tool_calls["guess_number"] > 0 and tool_calls["echo"] > 0, dict(tool_calls)
    assert any(r > 0 for env, r in scored if env == "echo")  # echo pays length / 10 per call

    logs = [row for row in trainer.state.log_history if "reward" in row]
    assert len(logs) == 2
    for step, row in enumerate(logs):
        rewards = scored[16 * step : 16 * (step + 1)]
        for env in ("guess_number", "echo"):
            mine = [r for e, r in rewards if e == env]
            key = env_metric(env, "reward_mean")
            if mine:
                assert row[key] == pytest.approx(sum(mine) / len(mine), abs=1e-5), (env, row)
            else:
                assert key not in row or math.isnan(row[key])


def test_a_mixture_factory_needs_two_envs_with_rewards() -> None:
    from openenv_train.training.factory_mixture import make_mixture_environment_factory

    class Env:
        def reset(self, **row: Any) -> None:
            return None

        def get_reward(self) -> float:
            return 0.0

    with pytest.raises(ValueError, match="two or more"):
        make_mixture_environment_factory({"a": Env})
    with pytest.raises(ValueError, match="'b' must be a class with reset"):
        make_mixture_environment_factory({"a": Env, "b": object})
    same = make_mixture_environment_factory({"a": Env, "b": Env})  # one class, two envs
    assert same["a"] is not same["b"] and issubclass(same["b"], Env)
