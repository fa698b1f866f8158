"""BlackJack's fast in-process greedy eval plays exactly what the real servers play."""

from __future__ import annotations


def test_in_process_eval_equals_eval_through_servers(blackjack_servers, tiny_model) -> None:
    from blackjack_env.evaluation import evaluate_policy, evaluate_via_servers
    from blackjack_env.text_spec import random_episode

    from openenv_train.policy.transformers_policy import TransformersPolicy
    from openenv_train.training import format_warmup

    model, tok = tiny_model

    def hit_below_15(rng):  # supervised on a fixed rule, so greedy play is a real mix of H/S
        turns = []
        for role, text in random_episode(rng):
            if role == "assistant":
                total = int(turns[-1][1].split()[1])
                text = "hit" if total < 15 else "stand"
                turns.append((role, text))
                if text == "stand":
                    break
            else:
                turns.append((role, text))
        return turns

    format_warmup(model, tok, hit_below_15, steps=60, batch_size=32, seed=7, loss_on="answers")
    policy = TransformersPolicy(model, tok)
    local = evaluate_policy(policy, 300, seed=4242)
    remote = evaluate_via_servers(policy, blackjack_servers, 300, seed=4242)
    for key in ("win", "push", "lose_rate", "mean_return"):
        assert local[key] == remote[key], (key, local, remote)
    assert local["hands"] == remote["hands"] == 300
    assert 0 < local["win"] < 1  # a real mix of outcomes, not a degenerate policy


def test_baselines_match_openspiel_rates() -> None:
    from blackjack_env.evaluation import baselines

    b = baselines(20000, seed=99)
    # OpenSpiel's rules over 10^6 hands: random 28.4%, always stand 38.4%, basic strategy 43.2%
    # (+-1 point here)
    assert abs(b["random"]["win"] - 0.284) < 0.015
    assert abs(b["always stand"]["win"] - 0.384) < 0.015
    assert abs(b["basic strategy"]["win"] - 0.432) < 0.015
    assert (
        b["basic strategy"]["mean_return"]
        > b["always stand"]["mean_return"]
        > b["random"]["mean_return"]
    )
