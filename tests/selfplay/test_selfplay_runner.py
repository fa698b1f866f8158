"""The self-play runner: one policy in every seat, rows per seat in GRPO's order, the past-
checkpoint pool, and the evaluation (exact NashConv, win/draw/loss per seat)."""

from __future__ import annotations

import pytest
from openspiel_games_env import OpenSpielEnv
from openspiel_games_env.evaluation import (
    model_policy,
    nash_conv,
    seat_contexts,
    uniform_nash_conv,
    win_draw_loss,
)
from openspiel_games_env.games import load
from openspiel_games_env.text_spec import KUHN_VOCAB, SeatTextSpec

from openenv_train.policy.tiny import build_word_tokenizer
from openenv_train.rollout.episode import RolloutConfig
from openenv_train.rollout.scripted import ScriptedPolicy
from openenv_train.rollout.selfplay import SelfPlayRunner


def kuhn_script(text: str) -> str:
    """Bet with a king, otherwise pass: a fixed, card-reading policy (seat by seat)."""
    view = text.split("kuhn")[-1]
    return "bet" if " card K " in view else "pass"


@pytest.fixture(scope="module")
def tokenizer():
    return build_word_tokenizer(KUHN_VOCAB)


def runner(url: str, tokenizer, **kw) -> SelfPlayRunner:
    policy = ScriptedPolicy(tokenizer, kw.pop("respond", kuhn_script))
    clients = [OpenSpielEnv(url) for _ in range(8)]
    return SelfPlayRunner(
        policy, SeatTextSpec("kuhn_poker"), clients, config=RolloutConfig(max_turns=4), **kw
    )


async def test_rows_are_per_seat_groups_of_one_deal(kuhn, tokenizer) -> None:
    r = runner(kuhn.url, tokenizer, seed=7)
    try:
        batch = await r.run(["p"] * 32, 4)  # 16 games, 4 per deal: groups of 4 rows per seat
    finally:
        await r.aclose()
    rows = batch.records
    assert len(rows) == 32 and [x.group for x in rows] == [i // 4 for i in range(32)]
    seats = [x.metrics["seat"] for x in rows]
    assert seats == ([0] * 4 + [1] * 4) * 4
    for k in range(8):  # one deal per group: every row of a group saw the same first view
        group = rows[4 * k : 4 * k + 4]
        assert len({tuple(x.prompt_ids) for x in group}) == 1
    # the scripted policy is deterministic, so the same deal gives the same rewards; zero-sum
    games = r.last_games
    assert all(sum(g.returns) == 0 and g.stop == "done" for g in games)
    by_seed = {}
    for g in games:
        by_seed.setdefault(g.seed, set()).add(tuple(g.returns))
    assert all(len(v) == 1 for v in by_seed.values())
    # each seat's row carries that seat's return
    for k in range(4):
        g = games[4 * k]
        assert rows[8 * k].reward == g.returns[0] and rows[8 * k + 4].reward == g.returns[1]
    assert batch.metrics["seat0/mean_return"] == -batch.metrics["seat1/mean_return"]
    trl = batch.to_trl()
    assert trl["env_reward"] == [x.reward for x in rows]
    # a seat's record holds only its own views: seat 1 never sees seat 0's card
    for x in rows:
        text = tokenizer.decode(x.prompt_ids)
        assert f"seat {x.metrics['seat']}" in text and text.count("card") == 1


async def test_loss_weight_scales_lost_games_in_the_rows_only(kuhn, tokenizer) -> None:
    r = runner(kuhn.url, tokenizer, seed=7, loss_weight=3.0)
    try:
        batch = await r.run(["p"] * 32, 4)
    finally:
        await r.aclose()
    games, rows = r.last_games, batch.records
    returns = [g.returns[s] for k in range(0, 16, 4) for s in (0, 1) for g in games[k : k + 4]]
    assert any(x < 0 for x in returns) and any(x > 0 for x in returns)
    assert [x.reward for x in rows] == [3.0 * x if x < 0 else x for x in returns]
    # the metrics report the game's own returns: zero-sum still
    assert batch.metrics["seat0/mean_return"] == -batch.metrics["seat1/mean_return"]
    with pytest.raises(ValueError, match="loss_weight must be >= 1"):
        runner(kuhn.url, tokenizer, loss_weight=0.5)


async def test_role_layout_is_one_group_per_seat(kuhn, tokenizer) -> None:
    r = runner(kuhn.url, tokenizer, advantages="role")
    try:
        batch = await r.run(["p"] * 16, 8)
        with pytest.raises(ValueError, match="num_generations = rows / seats = 8"):
            await r.run(["p"] * 16, 4)
    finally:
        await r.aclose()
    assert [x.metrics["seat"] for x in batch.records] == [0] * 8 + [1] * 8
    assert len({r_.seed for r_ in r.last_games}) == 8  # a fresh deal per game


async def test_illegal_answers_score_the_mover_and_the_game_goes_on(kuhn, tokenizer) -> None:
    r = runner(kuhn.url, tokenizer, respond=lambda text: "card")  # never a move
    try:
        batch = await r.run(["p"] * 8, 4)
    finally:
        await r.aclose()
    assert all(x.reward == SeatTextSpec.invalid_action_reward for x in batch.records)
    assert all(g.stop == "invalid" and len(g.moves) >= 2 for g in r.last_games)
    assert batch.metrics["invalid_share"] == 1.0


async def test_pool_games_keep_only_the_live_seat(kuhn, tokenizer) -> None:
    past = ScriptedPolicy(tokenizer, lambda text: "bet")
    r = runner(kuhn.url, tokenizer, opponents=lambda: [past], pool_share=1.0)
    try:
        batch = await r.run(["p"] * 16, 4)
    finally:
        await r.aclose()
    assert batch.metrics["pool_games"] == 16  # 2 groups x 2 seats x 4 games, one live seat each
    assert [x.metrics["seat"] for x in batch.records] == ([0] * 4 + [1] * 4) * 2
    assert past.calls > 0


def test_exact_nash_conv_of_a_model_and_the_contexts_it_reads(tokenizer) -> None:
    import torch

    from openenv_train.policy.tiny import build_tiny_llama

    state = load("kuhn_poker").new_initial_state()
    for a in (2, 0, 0, 1):  # K to seat 0, J to seat 1; pass, bet
        state.apply_action(a)
    views, answers = seat_contexts("kuhn_poker", state, 0)
    assert views == [
        "kuhn seat 0 card K history action:",
        "kuhn seat 0 card K history pass bet action:",
    ] and answers == ["pass"]
    torch.manual_seed(0)
    model = build_tiny_llama(tokenizer)
    mp = model_policy(model, tokenizer, "kuhn_poker")
    probs = mp.policy.action_probability_array
    assert probs.shape[0] == 12 and abs(probs.sum(axis=1) - 1).max() < 1e-6
    assert 0 < mp.illegal_mass < 1
    assert uniform_nash_conv("kuhn_poker") == pytest.approx(0.9167, abs=1e-3)
    assert 0 < nash_conv("kuhn_poker", mp.policy) < 3


async def test_win_draw_loss_per_seat_against_built_ins(kuhn, tokenizer) -> None:
    always_bet = ScriptedPolicy(tokenizer, lambda text: "bet")
    res = await win_draw_loss(always_bet, "kuhn_poker", kuhn.url, opponent="random", games=60)
    for seat in ("seat0", "seat1"):
        m = res[seat]
        assert m["win"] + m["draw"] + m["loss"] == pytest.approx(1.0) and m["draw"] == 0
    # always betting beats a random player in either seat (it folds half its bets)
    assert res["seat0"]["mean_return"] > 0 and res["seat1"]["mean_return"] > 0


def test_the_average_policy_is_cfr_s_average_strategy() -> None:
    """Reach-weighted averaging of the policies a run passes through: on CFR's iterates it gives
    CFR's own average strategy, near equilibrium where the last iterate is not."""
    from open_spiel.python.algorithms import cfr
    from openspiel_games_env.evaluation import PolicyAverage

    solver = cfr.CFRSolver(load("kuhn_poker"))
    avg = PolicyAverage("kuhn_poker")
    for _ in range(60):
        solver.evaluate_and_update_policy()
        avg.add(solver.current_policy())
    ours = nash_conv("kuhn_poker", avg.policy())
    theirs = nash_conv("kuhn_poker", solver.average_policy())
    assert ours == pytest.approx(theirs, abs=0.01) and ours < 0.05
    assert nash_conv("kuhn_poker", solver.current_policy()) > 2 * ours


def test_linear_weights_give_cfr_plus_s_average_strategy() -> None:
    """CFR+ weighs its k-th iterate k in its average: ``weight=k`` comes within 0.005 of it (CFR+
    updates the seats in turn, and its average takes each seat's policy between the two updates,
    ours after both), and uniform weights over the same iterates give a worse average."""
    from open_spiel.python.algorithms import cfr
    from openspiel_games_env.evaluation import PolicyAverage

    solver = cfr.CFRPlusSolver(load("kuhn_poker"))
    linear, uniform = PolicyAverage("kuhn_poker"), PolicyAverage("kuhn_poker")
    for k in range(1, 31):
        solver.evaluate_and_update_policy()
        linear.add(solver.current_policy(), weight=k)
        uniform.add(solver.current_policy())
    ours = nash_conv("kuhn_poker", linear.policy())
    theirs = nash_conv("kuhn_poker", solver.average_policy())
    assert ours == pytest.approx(theirs, abs=0.005)
    assert nash_conv("kuhn_poker", uniform.policy()) > 1.5 * ours
