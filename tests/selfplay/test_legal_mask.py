"""Legal-move masks in generation (no illegal move is ever sampled; the logprobs stay the
model's own) and GRPO groups played against the server's built-in opponent."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from openspiel_games_env import OpenSpielEnv
from openspiel_games_env.text_spec import TTT_VOCAB, SeatTextSpec

from openenv_train.policy.interface import SamplingSettings
from openenv_train.policy.tiny import build_tiny_model
from openenv_train.policy.transformers_policy import TransformersPolicy
from openenv_train.rollout.batcher import GenerationBatcher
from openenv_train.rollout.episode import RolloutConfig
from openenv_train.rollout.scripted import ScriptedPolicy
from openenv_train.rollout.selfplay import SelfPlayRunner


@pytest.fixture(scope="module")
def tiny():
    """An untrained tiny model over tic-tac-toe's words: it answers almost anything."""
    return build_tiny_model(TTT_VOCAB, seed=3)


async def test_the_first_token_is_one_of_the_allowed_and_the_logprob_is_the_models(tiny) -> None:
    model, tok = tiny
    policy = TransformersPolicy(model, tok)
    prompt = tok.encode("ttt seat 0 board .0 .1 .2 .3 .4 .5 .6 .7 .8 action:")
    eos = tok.eos_token_id
    cell = {tok.convert_tokens_to_ids(w) for w in ("4", "7")}
    answers = frozenset((c, eos) for c in cell)
    greedy = SamplingSettings(max_new_tokens=2, temperature=0.0)
    free, masked = policy.generate_sync([prompt, prompt], greedy, allowed=[None, answers])
    sampled = policy.generate_sync(
        [prompt] * 64, SamplingSettings(max_new_tokens=2, seed=0), allowed=[answers] * 64
    )
    with pytest.raises(ValueError, match="allowed: 1 given for 2 prompts"):
        policy.generate_sync([prompt, prompt], greedy, allowed=[answers])
    with torch.no_grad():
        own = model(torch.tensor([prompt])).logits[0, -1].log_softmax(-1)
    assert free.token_ids[0] == int(own.argmax())  # None: the row is not masked
    assert free.token_ids[0] not in cell  # (so the mask below changes the answer)
    best = max(cell, key=lambda i: float(own[i]))
    assert masked.token_ids == [best, eos]  # the whole answer: the cell, then EOS
    assert math.isclose(masked.logprobs[0], float(own[best]), rel_tol=1e-4)
    assert {tuple(g.token_ids) for g in sampled} == answers  # sampled among the allowed only
    await policy.aclose()


async def test_a_policy_that_cannot_mask_is_refused_by_name(tiny) -> None:
    _, tok = tiny
    batcher = GenerationBatcher(ScriptedPolicy(tok, lambda _t: "4"))
    with pytest.raises(ValueError, match="ScriptedPolicy cannot limit its answers"):
        await batcher.generate([1, 2], SamplingSettings(), allowed=frozenset({(5,)}))
    await batcher.aclose()


async def _games(url: str, tiny, **kw) -> tuple[SelfPlayRunner, list]:
    model, tok = tiny
    policy = TransformersPolicy(model, tok)
    spec = SeatTextSpec("tic_tac_toe", mask_illegal=kw.pop("mask_illegal", False))
    clients = [OpenSpielEnv(url) for _ in range(16)]
    runner = SelfPlayRunner(policy, spec, clients, config=RolloutConfig(max_turns=5), **kw)
    return runner, policy


async def test_masked_selfplay_never_plays_an_illegal_move(ttt, tiny) -> None:
    results = {}
    for mask in (False, True):
        runner, policy = await _games(ttt.url, tiny, mask_illegal=mask, seed=1)
        try:
            games = await runner.play(32)
        finally:
            await runner.aclose()
            await policy.aclose()
        results[mask] = games
    unmasked_invalid = sum(g.stop == "invalid" for g in results[False])
    assert unmasked_invalid >= 8  # the untrained model answers illegal cells without the mask
    assert all(g.stop == "done" for g in results[True])
    assert all(sum(g.returns) == 0 for g in results[True])  # finished, zero-sum games


async def test_a_seeded_run_samples_the_same_games_however_they_interleave(ttt, tiny) -> None:
    """``episode_seed``: each seat's answers come from a stream of their own per (batch, game,
    seat), so 16 sessions in batches of 64 and 3 sessions in batches of 2 play the same games;
    without it the draws follow the batches (the same torch seed, other games)."""
    model, tok = tiny

    async def play(sessions: int, batch: int, episode_seed: int | None) -> list[list[str]]:
        torch.manual_seed(0)
        policy = TransformersPolicy(model, tok)
        config = RolloutConfig(max_turns=5, max_batch_size=batch, episode_seed=episode_seed)
        clients = [OpenSpielEnv(ttt.url) for _ in range(sessions)]
        spec = SeatTextSpec("tic_tac_toe", mask_illegal=True)
        runner = SelfPlayRunner(policy, spec, clients, config=config, seed=4)
        try:
            await runner.run(["p"] * 32, 4)  # 16 games, 4 per seed
        finally:
            await runner.aclose()
            await policy.aclose()
        return [g.texts for g in runner.last_games]

    seeded = await play(16, 64, episode_seed=5)
    assert seeded == await play(3, 2, episode_seed=5)
    assert len({tuple(t) for t in seeded}) > 4  # the games of a seed still differ
    assert await play(16, 64, None) != await play(3, 2, None)


async def test_builtin_share_plays_each_seat_against_the_server(ttt, tiny) -> None:
    runner, policy = await _games(
        ttt.url, tiny, mask_illegal=True, builtin_share=1.0, builtin_opponents=("scripted",)
    )
    try:
        batch = await runner.run(["p"] * 32, 4)  # 4 deals x 4 games per seat, all vs scripted
    finally:
        await runner.aclose()
        await policy.aclose()
    assert batch.metrics["builtin_games"] == 32 and batch.metrics["pool_games"] == 0
    rows = batch.records
    assert [r.metrics["seat"] for r in rows] == ([0] * 4 + [1] * 4) * 4
    for game, task_seat in zip(runner.last_games, [0] * 4 + [1] * 4, strict=False):
        # the session held one seat: only that seat has a record; the server moved the other
        assert game.seats[task_seat].tokens is not None
        assert game.seats[1 - task_seat].tokens is None
    # the scripted opponent wins or blocks: an untrained model in either seat mostly loses
    assert sum(r.reward < 0 for r in rows) > sum(r.reward > 0 for r in rows)


async def test_openings_give_each_group_its_own_start_and_evals_the_empty_board(ttt, tiny) -> None:
    runner, policy = await _games(
        ttt.url, tiny, mask_illegal=True, openings=4, builtin_share=0.5, seed=2
    )
    try:
        await runner.run(["p"] * 64, 4)  # 8 deals x 4 games per seat
        trained = runner.last_games
        evals = await runner.play(8)
    finally:
        await runner.aclose()
        await policy.aclose()
    tok = tiny[1]

    def first_view(game, seat: int) -> str:
        return tok.decode(game.seats[seat].tokens.prompt_ids)

    held: dict[tuple[int, int], set[str]] = {}  # (seed, seat) -> first views vs the server
    for g in trained:
        assert g.stop == "done"
        seats = [s for s in (0, 1) if g.seats[s].tokens is not None]
        if len(seats) == 1:  # a seat against the built-in opponent (seeded: it moves the same)
            held.setdefault((g.seed, seats[0]), set()).add(first_view(g, seats[0]))
        else:  # self-play: both seats moved
            assert seats == [0, 1]
    assert held and all(len(views) == 1 for views in held.values())  # one start per group
    starts = [view for views in held.values() for view in views]
    empty = tok.decode(evals[0].seats[0].tokens.prompt_ids)
    assert all(tok.decode(g.seats[0].tokens.prompt_ids) == empty for g in evals)
    assert "board .0 .1 .2 .3 .4 .5 .6 .7 .8 action:" in empty  # evals: from the empty board
    assert len(set(starts)) >= 4 and any(view.count("x") >= 2 for view in starts)


def _answer_starts(mask: list[int]) -> list[int]:
    """Where each answer of the model (a run of 1s in the env mask) starts."""
    return [i for i, m in enumerate(mask) if m and (i == 0 or not mask[i - 1])]


@dataclass
class _Rounds:
    """Two batches against scripted play, every group replaying once a game is lost."""

    first: Any  # the first batch: nothing lost yet, games from the start
    second: Any  # the second: every group replays a lost game
    lost_before: list[list[Any]]  # per seat, the lost games kept after the first batch
    lost_after: list[list[Any]]  # ... and after the second
    originals: list[Any]  # the first batch's games
    replayed: list[Any]  # the second's
    policy: Any  # closed: only to build another runner with


async def _replay_rounds(url: str, tiny, **kw) -> _Rounds:
    runner, policy = await _games(
        url,
        tiny,
        mask_illegal=True,
        builtin_share=1.0,
        builtin_opponents=("scripted",),
        replay_share=1.0,
        seed=4,
        **kw,
    )
    try:
        first = await runner.run(["p"] * 32, 4)
        lost_before = [list(kept) for kept in runner._lost]
        originals = runner.last_games
        second = await runner.run(["p"] * 32, 4)
        lost_after = [list(kept) for kept in runner._lost]
        return _Rounds(first, second, lost_before, lost_after, originals, runner.last_games, policy)
    finally:
        await runner.aclose()
        await policy.aclose()


async def test_replay_plays_a_lost_game_again_from_one_of_its_positions(ttt, tiny) -> None:
    rounds = await _replay_rounds(ttt.url, tiny)
    first, second, lost_before = rounds.first, rounds.second, rounds.lost_before
    originals, replayed, policy = rounds.originals, rounds.replayed, rounds.policy
    assert first.metrics["replayed_games"] == 0
    assert all(lost_before), "the untrained model lost no game in a seat against scripted play"
    assert second.metrics["replayed_games"] == 32
    by_texts = {(g.seed, tuple(g.texts)): g for g in originals}
    checked = resumed = 0
    for game in replayed:
        (seat,) = [s for s in (0, 1) if game.seats[s].tokens is not None]
        t = game.seats[seat].tokens
        k = len(game.texts) - len(_answer_starts(t.env_mask))  # answers given, not generated
        source = [
            answers
            for seed, _, answers in lost_before[seat]
            if seed == game.seed and k < len(answers) and answers[:k] == game.texts[:k]
        ]
        assert source, "a replayed game does not start from a lost game of its seat"
        old = by_texts[(game.seed, tuple(source[0]))].seats[seat].tokens
        cut = _answer_starts(old.env_mask)[k]  # the original, before its (k+1)th answer
        # the same view, token for token, with the given answers masked out of training
        assert old.prompt_ids == t.prompt_ids
        assert old.completion_ids[:cut] == t.completion_ids[:cut]
        assert sum(t.env_mask[:cut]) == 0 and t.env_mask[cut] == 1
        checked += 1
        resumed += k > 0
    assert checked == 32 and resumed >= 8  # most start past the first answer
    with pytest.raises(ValueError, match="builtin_share > 0"):
        SelfPlayRunner(policy, None, [object()], config=RolloutConfig(), replay_share=0.5)


async def test_replay_explore_tries_each_legal_move_of_the_replayed_position(ttt, tiny) -> None:
    rounds = await _replay_rounds(ttt.url, tiny, replay_explore=True)
    replayed, tok = rounds.replayed, tiny[1]
    assert rounds.second.metrics["replayed_games"] == 32
    # the games the forced moves lost are not kept: the pool holds the policy's own losses
    assert rounds.lost_after == rounds.lost_before
    distinct = later = 0
    for g in range(0, 32, 4):  # a group: 4 games of one seat from one replayed position
        firsts, cells = [], None
        for game in replayed[g : g + 4]:
            (seat,) = [s for s in (0, 1) if game.seats[s].tokens is not None]
            t = game.seats[seat].tokens
            # only the explored answer is trained (the model's own logprob); the seat's later
            # answers are context, masked out like env text
            (at,) = _answer_starts(t.env_mask)
            assert t.logprobs[at] < 0
            view = tok.decode(t.prompt_ids + t.completion_ids[:at]).split("board ")[-1].split()
            k = sum(w.startswith("xo"[seat]) for w in view)  # the seat's answers given before
            assert t.completion_ids[at] == tok.convert_tokens_to_ids(game.texts[k])
            firsts.append(int(game.texts[k]))
            later += len(game.texts) - k - 1
            free = {int(w[1:]) for w in view if w.startswith(".")}
            cells = cells or sorted(free)
            assert cells == sorted(free)  # the same position in the whole group
        # game k of the group played the k-th legal cell (cycled where fewer than 4 are legal)
        assert firsts == [cells[k % len(cells)] for k in range(4)]
        distinct += len(set(firsts)) == 4
    assert distinct >= 4 and later >= 8  # games went on after the explored answer
