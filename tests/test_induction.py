"""Chapter 11's pieces: the repeated batch, the head scores, the attention-only model."""

from __future__ import annotations

import math

import pytest
import torch

from companion import AttentionOnlyLM, causal_mask, induction_score, previous_token_score, repeat_batch, repeated_tokens
from companion.models import repeat_losses, train_on_repeats


def test_the_repeated_batch_repeats_each_row_and_marks_the_copyable_predictions():
    ids, copyable = repeat_batch(torch.tensor([[3, 1, 4], [5, 9, 2]]))
    assert ids.tolist() == [[3, 1, 4, 3, 1, 4], [5, 9, 2, 5, 9, 2]]
    assert copyable.dtype == torch.bool and copyable.tolist() == [[False, False, False, True, True]] * 2
    ids, copyable = repeated_tokens(4, 7, 11, torch.Generator().manual_seed(0))
    assert ids.shape == (4, 14) and torch.equal(ids[:, :7], ids[:, 7:]) and int(ids.max()) < 11
    assert copyable.shape == (4, 13) and copyable.sum().item() == 4 * 6
    with pytest.raises(ValueError, match=r"int64 tensor \(batch, half\) with half >= 1, got torch.float32"):
        repeat_batch(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="half must be a positive"):
        repeated_tokens(2, 0, 5)


def _causal_weights(batch, heads, t, seed):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(batch, heads, t, t, generator=g, dtype=torch.float64, device="cpu")
    scores = scores.to(torch.get_default_device())
    return torch.softmax(scores.masked_fill(~causal_mask(t), float("-inf")), dim=-1)


def test_the_scores_average_the_entries_they_name():
    w = _causal_weights(3, 2, 8, 0)
    by_loop = [sum(w[b, h, i, i - 4 + 1].item() for b in range(3) for i in range(4, 8)) / 12 for h in range(2)]
    assert torch.allclose(induction_score(w, 4), torch.tensor(by_loop, dtype=torch.float64))
    real = torch.tensor([[True] * 8, [True] * 3 + [False] * 5, [False, True, True] + [True] * 5])
    pairs = [(b, i) for b in range(3) for i in range(1, 8) if real[b, i] and real[b, i - 1]]
    by_loop = [sum(w[b, h, i, i - 1].item() for b, i in pairs) / len(pairs) for h in range(2)]
    assert torch.allclose(previous_token_score(w, real), torch.tensor(by_loop, dtype=torch.float64))
    assert torch.allclose(previous_token_score(w), w.diagonal(-1, -2, -1).mean(dim=(0, 2)))
    # a perfect head of each kind scores 1
    t, half = 6, 3
    previous = torch.zeros(1, 1, t, t)
    previous[0, 0, 0, 0] = 1.0
    previous[0, 0, torch.arange(1, t), torch.arange(t - 1)] = 1.0
    assert previous_token_score(previous).item() == 1.0
    induction = torch.zeros(1, 1, t, t)
    induction[0, 0, torch.arange(half), 0] = 1.0
    induction[0, 0, torch.arange(half, t), torch.arange(1, half + 1)] = 1.0
    assert induction_score(induction, half).item() == 1.0


def test_the_scores_refuse_what_they_cannot_score():
    w = _causal_weights(1, 2, 6, 1)
    with pytest.raises(ValueError, match=r"half must be an int with 2 \* half = t = 6, got 4"):
        induction_score(w, 4)
    with pytest.raises(ValueError, match="no query whose token and the one before it are both real"):
        previous_token_score(w, torch.tensor([[True, False, True, False, True, False]]))
    with pytest.raises(ValueError, match=r"real must be a bool tensor \(batch, t\) = \(1, 6\)"):
        previous_token_score(w, torch.ones(1, 6))


def test_the_attention_only_model_is_causal_and_its_head_masks_switch_heads_off():
    torch.manual_seed(0)
    model = AttentionOnlyLM(13, d_model=16, num_heads=2, num_layers=2, max_len=10).eval()
    ids = torch.randint(0, 13, (2, 8))
    changed = ids.clone()
    changed[:, 5:] = (changed[:, 5:] + 1) % 13
    with torch.no_grad():
        logits, weights = model(ids, need_weights=True)
        assert torch.allclose(model(changed)[0][:, :5], logits[:, :5], atol=1e-6)
        assert len(weights) == 2 and weights[1].shape == (2, 2, 8, 8)
        off = [torch.zeros(2), torch.zeros(2)]  # every head off: the embedding straight to the unembedding
        assert torch.allclose(model(ids, head_masks=off)[0], model.unembed(model.embedding(ids)), atol=1e-6)
        one_off, _ = model(ids, head_masks=[torch.tensor([1.0, 0.0]), None])
        assert not torch.allclose(one_off, logits, atol=1e-4)
    with pytest.raises(ValueError, match=r"one entry per layer \(2\), got 1"):
        model(ids, head_masks=[None])


def test_repeat_losses_split_the_loss_into_its_two_parts():
    torch.manual_seed(0)
    model = AttentionOnlyLM(7, d_model=8, num_heads=2, num_layers=1, max_len=12).eval()
    ids, copyable = repeated_tokens(3, 5, 7, torch.Generator().manual_seed(2))
    with torch.no_grad():
        first, repeat = repeat_losses(model, ids, copyable)
        logits, _ = model(ids[:, :-1])
    nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none") / math.log(2)
    assert torch.isclose(first, nll[:, :4].mean()) and torch.isclose(repeat, nll[:, 5:].mean())


def test_training_on_repeats_logs_both_parts_and_the_probe():
    torch.manual_seed(0)
    model = AttentionOnlyLM(16, d_model=16, num_heads=2, num_layers=2, max_len=16)
    probe = repeated_tokens(8, 6, 16, torch.Generator().manual_seed(3))
    log = train_on_repeats(model, steps=20, vocab_size=16, halves=(3, 8), probe=probe, every=10)
    assert len(log["first"]) == len(log["repeat"]) == 20 and log["probe_steps"] == [0, 10, 20]
    assert log["induction"].shape == log["previous"].shape == (3, 2, 2)
    with pytest.raises(ValueError, match=r"2 \* high <= max_len=16, got \(3, 9\)"):
        train_on_repeats(model, steps=1, vocab_size=16, halves=(3, 9))
