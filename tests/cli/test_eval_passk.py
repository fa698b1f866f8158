"""``openenv-train eval --k``: the unbiased pass@k estimator against hand-computed values, and
the command end to end on a real countdown server with a tiny warmed-up model: the report (table
and JSON), the trajectory file, the EvalResult (scores and their parameters), and
``openenv-train replay`` on it (0 differences; a changed env reward is reported, exit 1)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from child_env import with_pythonpath

from openenv_train.training.passk import ks_up_to, pass_at_k, score

HERE = Path(__file__).parent


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 2 / 5),  # pass@1 is the success rate
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (5, 2, 3, 1 - 1 / 10),  # 1 - C(3,3)/C(5,3)
        (5, 2, 4, 1.0),  # n - c < k: every draw of 4 holds a success
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (4, 0, 2, 0.0),
        (4, 4, 1, 1.0),
    ],
)
def test_pass_at_k_matches_hand_computed(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_rejects_impossible_counts() -> None:
    for n, c, k in ((3, 4, 1), (3, 1, 4), (3, 1, 0)):
        with pytest.raises(ValueError, match="pass_at_k"):
            pass_at_k(n, c, k)


def test_score_averages_over_tasks() -> None:
    rec = lambda group, reward: SimpleNamespace(group=group, reward=reward)  # noqa: E731
    # task 0: 1 success of 4, task 1: none, task 2: all
    records = [rec(0, r) for r in (1, -1, -1, -1)] + [rec(1, -1)] * 4 + [rec(2, 1)] * 4
    s = score(records, 4)
    assert ks_up_to(4) == [1, 2, 4]
    assert s["tasks"] == 3 and s["episodes"] == 12
    assert s["pass@1"] == pytest.approx((1 / 4 + 0 + 1) / 3)
    assert s["pass@2"] == pytest.approx((1 / 2 + 0 + 1) / 3)  # 1 - C(3,2)/C(4,2) = 1/2
    assert s["pass@4"] == pytest.approx(2 / 3)
    assert s["mean@4"] == pytest.approx((-0.5 - 1 + 1) / 3)


@pytest.fixture(scope="module")
def countdown_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder as ``train`` leaves it: config.json and a tiny model that answers 1/2/3."""
    import torch

    from openenv_train.policy.tiny import build_tiny_model, save_tiny_model
    from openenv_train.recipes.grpo_text.config import TextRecipeConfig
    from openenv_train.recipes.grpo_text.countdown import CountdownSpec
    from openenv_train.training import quick_format_warmup

    torch.set_num_threads(1)
    run = tmp_path_factory.mktemp("runs") / "countdown"
    model, tok = build_tiny_model(CountdownSpec.vocabulary)
    quick_format_warmup(model, tok, CountdownSpec.random_episode)
    save_tiny_model(model, tok, run / "model")
    (run / "config.json").write_text(TextRecipeConfig(name="countdown").model_dump_json())
    return run


def openenv_train(*args: str, capsys: Any) -> SimpleNamespace:
    """``openenv-train ARGS`` in this process (its env servers are real child processes)."""
    from openenv_train.cli.main import main

    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)


@pytest.mark.timeout(900)
def test_eval_k_reports_passk_and_replay_finds_changed_rewards(
    countdown_run: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    traj = countdown_run / "traj.jsonl"
    done = openenv_train(
        "eval",
        str(countdown_run / "model"),
        "--k",
        "4",
        "--tasks",
        "6",
        "--json",
        "--trajectories",
        str(traj),
        capsys=capsys,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout[done.stdout.index("{") :])
    scores = report["envs"]["countdown"]
    assert scores["tasks"] == 6 and scores["k"] == 4 and scores["episodes"] == 24
    assert 0 <= scores["pass@1"] <= scores["pass@2"] <= scores["pass@4"] <= 1
    assert -1 <= scores["mean@4"] <= 1
    # the result beside it (OpenEnv's EvalResult shape): the same scores with every parameter
    from openenv_train.openenv.evals import EvalResult

    result = EvalResult.model_validate_json(Path(report["result"]).read_text())
    assert result.scores == report["envs"]
    assert result.config.harness_name == "PassAtKEval" and result.config.dataset == "countdown"
    params = result.config.eval_parameters
    assert (params["tasks"], params["k"], params["seed"]) == (6, 4, 2_000_000_000)
    assert params["model"] == str(countdown_run / "model")
    assert params["rollout"]["temperature"] == 1.0 and params["threshold"] == 0.0

    rows = [json.loads(line) for line in traj.read_text().splitlines()]
    assert len(rows) == 24
    assert {(r["task"], r["sample"]) for r in rows} == {(t, s) for t in range(6) for s in range(4)}
    for r in rows:
        assert r["env"] == "countdown" and r["seed"] == r["reset_kwargs"]["seed"]
        assert r["seed"] == 2_000_000_000 + r["task"]  # the k samples of a task: one game
        assert r["prompt"].startswith("total 0 target") and r["prompt_ids"]
        model_turns = [t for t in r["turns"] if t["role"] == "model"]
        assert model_turns and all(t["token_ids"] for t in model_turns)
    valid = [r for r in rows if not r["invalid"]]
    assert valid, "the warmed-up model should answer 1, 2 or 3 in most episodes"
    mean4 = sum(r["reward"] for r in rows) / len(rows)
    assert mean4 == pytest.approx(scores["mean@4"])

    same = openenv_train("replay", str(traj), capsys=capsys)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "replayed 24 episodes: 0 reward(s) differ" in same.stdout

    monkeypatch.setenv("PYTHONPATH", with_pythonpath(HERE)["PYTHONPATH"])  # the variant's module
    changed = openenv_train(
        "replay",
        str(traj),
        "--app",
        "countdown=countdown_variant:app",
        "--json",
        capsys=capsys,
    )
    assert changed.returncode == 1, changed.stdout + changed.stderr
    diff = json.loads(changed.stdout)
    assert diff["episodes"] == 24
    assert diff["differing"] == len(valid)  # every episode the env scored, none of the invalid ones
    for d in diff["differences"]:
        assert d["replayed"] == 2 * d["stored"]


@pytest.mark.timeout(900)
def test_table_output_and_bad_input(countdown_run: Path, tmp_path: Path, capsys: Any) -> None:
    done = openenv_train(
        "eval",
        str(countdown_run / "model"),
        "--k",
        "2",
        "--tasks",
        "2",
        "--trajectories",
        str(tmp_path / "t.jsonl"),
        capsys=capsys,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "pass@1" in done.stdout and "mean@2" in done.stdout and "countdown" in done.stdout
    assert f"result (scores and every parameter behind them) -> {countdown_run}" in done.stdout
    assert (countdown_run / "eval" / "result_k2.json").is_file()
    missing = openenv_train("replay", str(tmp_path / "nope.jsonl"), capsys=capsys)
    assert missing.returncode == 2 and "eval --k" in missing.stderr
    (tmp_path / "bad.jsonl").write_text('{"env": "x"}\n')
    bad = openenv_train("replay", str(tmp_path / "bad.jsonl"), capsys=capsys)
    assert bad.returncode == 2 and "bad.jsonl:1" in bad.stderr


class _PaddedAnswers:
    """A policy that samples ``2 <pad> <eos>`` every turn, decoded where every backend decodes
    (``make_generation``: special tokens skipped), so the env receives ``"2"``."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    async def generate(self, prompts: list[list[int]], sampling: Any) -> list[Any]:
        from openenv_train.policy._common import make_generation, stop_ids

        tok = self.tokenizer
        ids = [tok.convert_tokens_to_ids("2"), tok.pad_token_id, tok.eos_token_id]
        stops = stop_ids(tok, sampling)
        return [make_generation(ids, [0.0] * len(ids), tok, stops) for _ in prompts]

    async def aclose(self) -> None:
        pass


@pytest.mark.timeout(300)
def test_replay_plays_exactly_the_text_the_env_received(tmp_path: Path) -> None:
    """A special token sampled mid-answer (``2 <pad>``) is skipped in the text the env gets; the
    trajectory must store that same text, or replay parses ``"2 <pad>"``, calls it invalid and
    reports a difference that never happened (a false CI failure)."""
    from openenv_train.policy.tiny import build_word_tokenizer
    from openenv_train.recipes.grpo_text.countdown import CountdownSpec
    from openenv_train.rollout import RolloutConfig
    from openenv_train.training.passk import EvalTarget, evaluate_passk, write_jsonl
    from openenv_train.training.replay import replay_file

    target = EvalTarget(
        "countdown",
        "openenv_train.recipes.grpo_text.countdown:app",
        "openenv_train.recipes.grpo_text.countdown:CountdownSpec",
    )
    policy = _PaddedAnswers(build_word_tokenizer(CountdownSpec.vocabulary))
    config = RolloutConfig(max_turns=4, max_new_tokens=4, chat_template=False)
    scores, rows = evaluate_passk(policy, [target], tasks=2, k=1, seed=3, config=config)
    assert all(r["invalid"] == 0 for r in rows), "the env received '2' each turn"
    for r in rows:
        answers = [t for t in r["turns"] if t["role"] == "model"]
        assert answers and all(t["text"] == "2" for t in answers)
        assert all("<pad>" in t["tokens"] for t in answers)  # the sampled tokens stay visible
    report = replay_file(write_jsonl(tmp_path / "t.jsonl", rows))
    assert report.episodes == 2 and report.differences == []


@pytest.mark.timeout(300)
def test_eval_into_a_pipe_prints_no_progress_bars(countdown_run: Path) -> None:
    """Piped (a CI log, ``| tee``): the tables and paths, no "Loading weights: 100%|..." bars
    (issue 36)."""
    from cli_runs import run_cli

    for extra in (["--episodes", "4"], ["--k", "1", "--tasks", "1"]):
        done = run_cli(["eval", str(countdown_run / "model"), *extra], timeout=240)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "it/s" not in done.stderr + done.stdout and "%|" not in done.stderr, done.stderr
