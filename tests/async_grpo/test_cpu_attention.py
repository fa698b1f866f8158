"""The CPU stand-in for the FlashAttention kernel of TRL's AsyncGRPOTrainer: the packed (tree)
forward it enables gives each sample exactly the logprobs of a plain forward of that sample alone.
Needs trl (the train extra), not vLLM."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("trl.experimental.async_grpo")


def _plain_logprobs(model, ids: list[int], mask: list[int]) -> list[float]:
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]
    logp = torch.log_softmax(logits.float(), dim=-1)
    return [logp[p - 1, ids[p]].item() for p in range(1, len(ids)) if mask[p]]


def test_tree_packed_forward_matches_plain_forward_per_sample() -> None:
    from blackjack_env.text_spec import VOCABULARY
    from trl.experimental.async_grpo.packing import TREE_ATTENTION, TreeRow, register_tree_attention

    from openenv_train.policy.tiny import build_tiny_model
    from openenv_train.training.async_grpo import enable_cpu_async_grpo

    assert enable_cpu_async_grpo() is True  # these machines have no CUDA
    register_tree_attention()
    model, tok = build_tiny_model(VOCABULARY, seed=3, num_heads=2, hidden_size=64)
    shared = "player 15 hard dealer 6 action:"  # three samples share it: a packed prefix tree
    samples = [  # (context, completion): the loss is on the completion tokens
        (shared, " hit<eos> player 19 hard dealer 6 action: stand<eos>"),
        (shared, " stand<eos>"),
        (shared, " hit<eos>"),
        ("player 12 soft dealer A action:", " hit<eos>"),
    ]
    row = TreeRow()
    expected = []
    for context, completion in samples:
        n_context = len(tok.encode(context))
        ids = tok.encode(context + completion)
        mask = [0] * n_context + [1] * (len(ids) - n_context)
        row.add(
            {
                "input_ids": np.asarray(ids),
                "completion_mask": np.asarray(mask),
                "old_log_probs": np.zeros(len(ids), dtype=np.float32),
                "advantage": 1.0,
                "group_id": 0,
            }
        )
        expected += _plain_logprobs(model, ids, mask)
    packed = row.pack()
    assert len(packed["input_ids"]) < sum(len(s["input_ids"]) for s in row.samples)  # shared prefix
    model.config._attn_implementation = TREE_ATTENTION
    max_q, max_k = packed["tree_max_seqlens"].tolist()
    with torch.no_grad():
        logits = model(
            input_ids=packed["input_ids"][None],
            position_ids=packed["position_ids"][None],
            tree_kv_index=packed["tree_kv_index"],
            tree_cu_seqlens_q=packed["tree_cu_seqlens_q"],
            tree_cu_seqlens_k=packed["tree_cu_seqlens_k"],
            tree_max_seqlen_q=max_q,
            tree_max_seqlen_k=max_k,
        ).logits[0]
    logp = torch.log_softmax(logits.float(), dim=-1)
    index = packed["token_index"]
    got = logp[index, packed["shift_labels"][index]].tolist()
    assert got == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("window", [(-1, -1), (2, 0)])
def test_varlen_attention_matches_per_segment_attention_with_gqa(window) -> None:
    from openenv_train.training.async_grpo import varlen_attention

    gen = torch.Generator().manual_seed(0)
    len_q, len_k = [3, 1, 4], [5, 1, 4]  # a query segment sees its path: Lk >= Lq
    q = torch.randn(sum(len_q), 4, 8, generator=gen)
    k = torch.randn(sum(len_k), 2, 8, generator=gen)  # 2 kv heads for 4 query heads
    v = torch.randn(sum(len_k), 2, 8, generator=gen)
    cu_q = torch.tensor([0, 3, 4, 8], dtype=torch.int32)
    cu_k = torch.tensor([0, 5, 6, 10], dtype=torch.int32)
    out = varlen_attention(q, k, v, cu_q, cu_k, 4, 5, causal=True, window_size=window)
    expected = []
    for s in range(3):
        qs = q[cu_q[s] : cu_q[s + 1]].transpose(0, 1)
        ks = k[cu_k[s] : cu_k[s + 1]].transpose(0, 1).repeat_interleave(2, dim=0)
        vs = v[cu_k[s] : cu_k[s + 1]].transpose(0, 1).repeat_interleave(2, dim=0)
        i = torch.arange(len_q[s])[:, None] + len_k[s] - len_q[s]
        j = torch.arange(len_k[s])[None, :]
        mask = (j <= i) & ((j >= i - window[0]) if window[0] >= 0 else True)
        attn = torch.nn.functional.scaled_dot_product_attention(qs, ks, vs, attn_mask=mask)
        expected.append(attn.transpose(0, 1))
    assert torch.allclose(out, torch.cat(expected), atol=1e-5)
