"""masked_mean: the mean over real positions only (chapters 7 and 9), used by the classifier and
the sentence embeddings."""

import pytest
import torch

from companion import TransformerClassifier, masked_mean, mean_pool


def test_by_hand():
    x = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]],
                      [[5.0, 6.0], [7.0, 8.0], [9.0, 10.0]]])
    keep = torch.tensor([[1, 1, 0], [1, 1, 1]])
    assert torch.equal(masked_mean(x, keep), torch.tensor([[2.0, 3.0], [7.0, 8.0]]))
    assert torch.equal(masked_mean(x, keep.bool()), masked_mean(x, keep))


def test_padding_values_never_matter_and_gradients_skip_them():
    x = torch.randn(3, 5, 4, requires_grad=True)
    keep = torch.tensor([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    noisy = torch.where(keep[..., None], x, torch.full_like(x, 1e6))
    assert torch.allclose(masked_mean(noisy, keep), masked_mean(x, keep))
    masked_mean(x, keep).sum().backward()
    assert bool((x.grad[~keep] == 0).all()) and bool((x.grad[keep] != 0).all())


def test_infinite_or_nan_padding_never_enters_the_mean():
    x = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [float("inf"), float("nan")]]])
    keep = torch.tensor([[1, 1, 0]])
    assert torch.equal(masked_mean(x, keep), torch.tensor([[2.0, 3.0]]))


def test_a_long_half_precision_mean_does_not_overflow():
    # 256 tokens near 300 to 400: their float16 sum (about 90,000) is past float16's 65,504
    x = torch.linspace(300, 400, 256, dtype=torch.float64).reshape(1, 256, 1).repeat(1, 1, 2)
    keep = torch.ones(1, 256, dtype=torch.bool)
    for dtype in (torch.float16, torch.bfloat16):
        got = masked_mean(x.to(dtype), keep)
        assert got.dtype == dtype and bool(torch.isfinite(got).all())
        assert torch.allclose(got.double(), x.mean(dim=1), rtol=1e-2)


def test_mean_pool_and_the_classifier_use_it():
    hidden, mask = torch.randn(2, 4, 3), torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    assert torch.equal(mean_pool(hidden, mask), masked_mean(hidden, mask))
    model = TransformerClassifier(20, 2, d_model=8, num_heads=2, num_layers=1, pooling="mean", pad_id=0).eval()
    tokens = torch.tensor([[3, 4, 0, 0], [5, 6, 7, 8]])
    x, keep, _ = model.encode(tokens)
    assert torch.equal(model.pool(x, keep), masked_mean(x, tokens != 0))


@pytest.mark.parametrize("keep,error,message", [
    (torch.ones(2, 4), ValueError, r"keep must be a bool or int tensor \(batch, t\) = \(2, 3\) matching x"),
    (torch.ones(2, 4, dtype=torch.bool), ValueError, r"\(batch, t\) = \(2, 3\)"),
    (torch.tensor([[1, 1, 0], [0, 0, 0]]), ValueError, r"a row of keep is all 0 \(false\)"),
    (torch.tensor([[1, 2, 0], [1, 1, 1]]), ValueError, r"keep must hold only 0 \(padding\) and 1.*\[0, 1, 2\]"),
])
def test_misuse_is_explained(keep, error, message):
    with pytest.raises(error, match=message):
        masked_mean(torch.randn(2, 3, 4), keep)
