"""Chapter 5's which-comes-first task and its encoder with each kind of positions."""

import pytest
import torch

from companion import POSITIONS, WhichFirst, train_which_first, which_first_accuracy, which_first_batch
from companion.data.which_first import A, B


def test_batches_by_hand():
    tokens, label = which_first_batch(300, 7, 10, torch.Generator().manual_seed(0))
    assert tokens.shape == (300, 7) and label.shape == (300,)
    assert tokens.dtype == label.dtype == torch.int64
    assert ((tokens == A).sum(1) == 1).all() and ((tokens == B).sum(1) == 1).all()
    assert ((tokens >= 0) & (tokens < 10)).all()
    pos_a, pos_b = (tokens == A).int().argmax(1), (tokens == B).int().argmax(1)
    assert torch.equal(label, (pos_a < pos_b).long())
    assert 0.4 < label.float().mean() < 0.6  # both orders, about equally often
    assert (pos_a == 0).any() and (pos_b == 6).any()  # every position can hold a marker
    again = which_first_batch(300, 7, 10, torch.Generator().manual_seed(0))
    assert torch.equal(again[0], tokens) and torch.equal(again[1], label)


@pytest.mark.parametrize("kwargs, message", [
    (dict(n=2, t=1, vocab_size=5), "t must be at least 2"),
    (dict(n=2, t=4, vocab_size=2), "vocab_size must be at least 3"),
])
def test_batch_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        which_first_batch(**kwargs)


def swap_markers(tokens):
    swapped = tokens.clone()
    swapped[tokens == A], swapped[tokens == B] = B, A
    return swapped


@pytest.mark.parametrize("position", POSITIONS)
def test_only_a_model_without_positions_is_blind_to_the_order(position):
    """Swapping A and B keeps the bag of tokens: without positions the logits cannot change."""
    torch.manual_seed(0)
    model = WhichFirst(12, position).double().eval()
    tokens, _ = which_first_batch(16, 9, 12, torch.Generator().manual_seed(1))
    same = torch.allclose(model(tokens), model(swap_markers(tokens)), atol=1e-12, rtol=0)
    assert same == (position == "none")


def test_concatenation_halves_the_token_width_and_the_embedding_parameters():
    add = WhichFirst(50, "sinusoidal", "add", d_model=32)
    cat = WhichFirst(50, "sinusoidal", "concat", d_model=32)
    tokens = torch.randint(2, 50, (3, 11))
    assert add.encode(tokens).shape == cat.encode(tokens).shape == (3, 11, 32)
    assert cat.embed.weight.shape == (50, 16)
    assert sum(p.numel() for p in add.parameters()) - sum(p.numel() for p in cat.parameters()) == 50 * 16
    encoded = cat.encode(tokens)
    torch.testing.assert_close(encoded[0, :, 16:], encoded[2, :, 16:])  # the second half: positions only


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(position="absolute"), ValueError, "position must be one of"),
    (dict(position="rotary", combine="concat"), ValueError, "needs position vectors"),
    (dict(position="none", combine="concat"), ValueError, "needs position vectors"),
    (dict(position="sinusoidal", combine="stack"), ValueError, "combine must be one of"),
    (dict(position="rotary", d_model=12, num_heads=4), ValueError, "must be even, got d_k=3"),
])
def test_construction_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        WhichFirst(10, **kwargs)


def test_a_learned_table_cannot_encode_past_its_rows():
    model = WhichFirst(10, "learned", max_len=8)
    model(torch.randint(2, 10, (2, 8)))
    with pytest.raises(ValueError, match="max_len=8 rows: it cannot encode a sequence of length 9"):
        model(torch.randint(2, 10, (2, 9)))


def test_float_tokens_are_refused():
    with pytest.raises(TypeError, match="integer token ids"):
        WhichFirst(10, "none")(torch.zeros(2, 5))


def test_positions_learn_the_task_and_no_positions_cannot():
    """The chapter's finding, small: with rotary positions the order is learned; without, chance."""
    results = {}
    for position in ("none", "rotary"):
        torch.manual_seed(0)
        model = WhichFirst(16, position, d_model=16, num_heads=2, num_layers=1)
        losses = train_which_first(model, steps=150, lengths=(4, 8), batch_size=64, seed=0)
        assert len(losses) == 150
        results[position] = which_first_accuracy(model, t=8, n=1000)
    assert abs(results["none"] - 0.5) < 0.06
    assert results["rotary"] > 0.9, results
