"""Chapter 3's retrieval task and model: shapes, the three scalings, training, and misuse."""

import math

import pytest
import torch

from companion import Retriever, random_rotation, retrieval_batch, train_retriever


def test_rotation_is_orthogonal():
    R = random_rotation(8, torch.Generator().manual_seed(0))
    torch.testing.assert_close(R @ R.T, torch.eye(8), atol=1e-5, rtol=0)


def test_batch_shapes_and_noise_free_queries_are_rotated_targets():
    R = random_rotation(5, torch.Generator().manual_seed(0))
    query, keys, target = retrieval_batch(7, 4, R, noise=0.0, generator=torch.Generator().manual_seed(1))
    assert query.shape == (7, 5) and keys.shape == (7, 4, 5) and target.shape == (7,)
    assert target.dtype == torch.int64 and int(target.min()) >= 0 and int(target.max()) < 4
    torch.testing.assert_close(query, keys[torch.arange(7), target] @ R)


def test_scores_by_hand_and_the_three_scalings():
    query, keys = torch.randn(3, 4), torch.randn(3, 6, 4)
    torch.manual_seed(0)
    scaled = Retriever(4, 16, "sqrt")
    torch.manual_seed(0)
    none = Retriever(4, 16, "none")
    torch.manual_seed(0)
    folded = Retriever(4, 16, "folded")
    q, k = scaled.W_q(query), scaled.W_k(keys)
    by_hand = torch.einsum("nd,ntd->nt", q, k) / 4.0  # 1/sqrt(16)
    torch.testing.assert_close(scaled(query, keys), by_hand)
    torch.testing.assert_close(none(query, keys), 4.0 * by_hand)
    torch.testing.assert_close(folded(query, keys), by_hand)  # folded = scaled at initialisation


def test_initial_projections_have_unit_variance_components():
    torch.manual_seed(0)
    model = Retriever(256, 64)
    q = model.W_q(torch.randn(4000, 256))
    assert abs(q.var().item() - 1.0) < 0.1


def test_training_learns_the_task_and_is_reproducible():
    R = random_rotation(16, torch.Generator().manual_seed(0))
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        runs.append(train_retriever(Retriever(16, 16), R, steps=150, lr=1e-2, t=4, test_size=500))
    assert runs[0] == runs[1]
    assert runs[0]["test_accuracy"] > 0.6  # chance is 1/4
    assert sum(runs[0]["loss"][-10:]) < sum(runs[0]["loss"][:10])


def test_sgd_without_the_scale_diverges_where_the_scaled_model_trains():
    """Chapter 3's measured claim, at a small size: SGD lr 0.5, d_k = 256."""
    R = random_rotation(256, torch.Generator().manual_seed(0))
    out = {}
    for scaling in ("sqrt", "none"):
        torch.manual_seed(0)
        out[scaling] = train_retriever(Retriever(256, 256, scaling), R, steps=60, optimizer="sgd", lr=0.5,
                                       test_size=200)
    assert out["sqrt"]["test_accuracy"] > 0.9
    loss = out["none"]["test_loss"]
    assert not math.isfinite(loss) or loss > 1e6, loss  # diverged (blown up, or already NaN)


@pytest.mark.parametrize("call, message", [
    (lambda: Retriever(4, 4, "cube"), "scaling must be one of"),
    (lambda: retrieval_batch(2, 1, torch.eye(3)), "t must be at least 2"),
    (lambda: retrieval_batch(2, 3, torch.ones(3, 2)), "square"),
    (lambda: retrieval_batch(2, 3, torch.eye(3), noise=-1.0), "noise must be"),
    (lambda: train_retriever(Retriever(3, 3), torch.eye(3), steps=1, optimizer="lbfgs"), "optimizer must be"),
])
def test_misuse_says_what_was_expected(call, message):
    with pytest.raises(ValueError, match=message):
        call()
