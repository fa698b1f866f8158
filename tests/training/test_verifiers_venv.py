"""A verifiers 0.4 env (the v1 API, which pins ``mcp==2.0.0`` and ``openai<3``) served from its
own venv (``runtime="venv"``, built from the env package's requirements and cached by their hash)
trains 2 GRPO steps beside this trainer, whose interpreter keeps its own packages.

The venv is cached in the system temp folder across sessions: the first run builds it (about 2
minutes from pip's cache), every later one starts the server in seconds.
"""

from __future__ import annotations

import importlib.metadata
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from packaging.version import Version
from tiny_grpo import cpu_grpo_config

APP = "verifiers_env.server.apps:vf-arithmetic"
CACHE = Path(tempfile.gettempdir()) / "openenv-train-test-venvs"
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def venv_server() -> Iterator[str]:
    from openenv_train.runtime import start_servers

    # the env package's own requirement (verifiers>=0.3.1) resolves to the newest, 0.4
    with start_servers(APP, 1, runtime="venv", cache_dir=CACHE, startup_timeout=300) as group:
        yield group.base_urls[0]


def test_the_server_runs_verifiers_0_4_beside_this_interpreters_own(venv_server) -> None:
    served = httpx.get(venv_server + "/metadata").json()["version"]
    assert Version(served) >= Version("0.4")
    try:
        here = importlib.metadata.version("verifiers")
    except importlib.metadata.PackageNotFoundError:
        here = None
    assert here != served  # the trainer's own (0.3 here, or none) is untouched


def test_the_tasks_own_reward_scores_answers(venv_server) -> None:
    from openenv_train.client import GenericEnvClient

    with GenericEnvClient(base_url=venv_server).sync() as env:
        for answer, reward in (("right", 1.0), ("100", 0.0)):
            obs = env.reset(seed=3).observation
            a, b = (int(x) for x in re.findall(r"(\d+) \+ (\d+)", obs["question"])[0])
            result = env.step({"answer": str(a + b) if answer == "right" else answer})
            assert result.reward == reward and result.observation["scores"] == {
                "exact_answer": reward
            }


def test_two_grpo_steps_on_the_venv_env(venv_server, tmp_path) -> None:
    import torch
    from datasets import Dataset
    from trl import GRPOTrainer
    from verifiers_env.text_spec import VerifiersSpec
    from vf_arithmetic import arithmetic_rows

    from openenv_train.policy.tiny import build_tiny_llama, build_word_tokenizer
    from openenv_train.training import env_reward, make_rollout_func

    torch.set_num_threads(1)
    corpus = [f"{r['question']} {r['answer']}" for r in arithmetic_rows(200, 0, 9)]
    tok = build_word_tokenizer(corpus=[*corpus, " ".join(str(n) for n in range(19))])
    model = build_tiny_llama(tok, seed=0)
    before = [p.detach().clone() for p in model.parameters()]
    rewards: list[float] = []

    def one_word(completions, **kwargs) -> list[float]:
        """A shaping reward with spread even before the model can add: weights must move."""
        return [1.0 if len(str(c).split()) == 1 else 0.0 for c in completions]

    f = make_rollout_func(
        VerifiersSpec(seed=0),
        [venv_server],
        on_batch=lambda batch: rewards.extend(r.reward for r in batch.records),
    )
    args = cpu_grpo_config(tmp_path, max_completion_length=8)
    try:
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=[env_reward, one_word],
            args=args,
            train_dataset=Dataset.from_dict({"prompt": ["verifiers"] * 32}),
            processing_class=tok,
            rollout_func=f,
        )
        trainer.train()
    finally:
        f.close()
    assert trainer.state.global_step == 2
    assert len(rewards) == 16 and set(rewards) <= {0.0, 1.0}  # the task's own reward, per row
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
