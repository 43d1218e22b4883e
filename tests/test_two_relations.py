"""Chapter 4's two-relations task and model: targets by hand, training, head ablation, misuse."""

import pytest
import torch

from companion import TwoRelations, train_two_relations, two_relations_accuracy, two_relations_batch
from companion.data.two_relations import IGNORE


def test_targets_by_hand():
    tokens, marked, target = two_relations_batch(50, 6, 7, torch.Generator().manual_seed(0))
    assert tokens.shape == marked.shape == target.shape == (50, 6)
    assert tokens.dtype == target.dtype == torch.int64 and marked.dtype == torch.bool
    assert (marked.sum(1) == 1).all()  # one marked position per row
    assert (target[:, 0] == IGNORE).all()
    for row in range(50):
        m = int(marked[row].nonzero())
        for i in range(1, 6):
            assert int(target[row, i]) == (int(tokens[row, m]) - int(tokens[row, i - 1])) % 7


def test_same_generator_same_batch():
    a = two_relations_batch(4, 5, 3, torch.Generator().manual_seed(3))
    b = two_relations_batch(4, 5, 3, torch.Generator().manual_seed(3))
    assert all(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("kwargs, message", [
    (dict(n=2, t=1, vocab_size=3), "t must be at least 2"),
    (dict(n=2, t=4, vocab_size=1), "vocab_size must be at least 2"),
    (dict(n=0, t=4, vocab_size=3), "n must be a positive int"),
])
def test_batch_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        two_relations_batch(**kwargs)


def test_two_heads_learn_the_task_and_each_head_matters():
    """The chapter's finding, small: 2 heads of width 16 each solve it; removing either head breaks it."""
    torch.manual_seed(0)
    model = TwoRelations(vocab_size=5, max_len=8, d_model=32, num_heads=2)
    losses = train_two_relations(model, steps=300, t=8, batch_size=128, seed=0)
    assert len(losses) == 300 and losses[-1] < 0.1 * losses[0]
    test = two_relations_batch(500, 8, 5, torch.Generator().manual_seed(1))
    assert two_relations_accuracy(model, *test) > 0.95
    for head in range(2):
        keep = torch.ones(2)
        keep[head] = 0.0
        assert two_relations_accuracy(model, *test, head_mask=keep) < 0.6
    logits, weights = model(test[0], test[1], need_weights=True)
    assert logits.shape == (500, 8, 5) and weights.shape == (500, 2, 8, 8)


def test_model_errors():
    model = TwoRelations(vocab_size=5, max_len=8, d_model=16, num_heads=2)
    tokens, marked, _ = two_relations_batch(2, 9, 5)
    with pytest.raises(ValueError, match="longer than max_len=8"):
        model(tokens, marked)
    with pytest.raises(ValueError, match=r"tokens and marked must both be \(batch, t\)"):
        model(tokens[:, :4], marked[:, :5])
    with pytest.raises(ValueError, match="not divisible by num_heads=3"):
        TwoRelations(vocab_size=5, max_len=8, d_model=16, num_heads=3)
