"""Positional encodings."""

import math

import pytest
import torch

from companion import LearnedPositionalEmbedding, SinusoidalPositionalEncoding, sinusoidal_encoding, sinusoidal_shift


def test_sinusoidal_formula_by_hand():
    E = sinusoidal_encoding(50, 6)
    p, i = 7, 1  # columns 2i = 2 and 2i + 1 = 3
    assert E[p, 2 * i].item() == pytest.approx(math.sin(p / 10000 ** (2 * i / 6)), abs=1e-6)
    assert E[p, 2 * i + 1].item() == pytest.approx(math.cos(p / 10000 ** (2 * i / 6)), abs=1e-6)
    assert E[0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]


def test_odd_width_ends_on_a_sine():
    E = sinusoidal_encoding(10, 5)
    assert E.shape == (10, 5)
    torch.testing.assert_close(E[:, 4], torch.sin(torch.arange(10.0) / 10000 ** (4 / 5)))


def test_relative_positions_are_a_rotation():
    """E[p + k] = E[p] M_k for one matrix M_k, the same for every p: per frequency w, a rotation by k w."""
    d, k = 8, 3
    E = sinusoidal_encoding(40, d)
    M = torch.zeros(d, d)
    for i in range(d // 2):
        w = 1 / 10000 ** (2 * i / d)
        c, s = math.cos(k * w), math.sin(k * w)
        # [sin(a + b), cos(a + b)] = [sin a, cos a] @ [[cos b, -sin b], [sin b, cos b]]
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, -s], [s, c]])
    torch.testing.assert_close(E[: 40 - k] @ M, E[k:], atol=1e-5, rtol=0)
    torch.testing.assert_close(sinusoidal_shift(k, d), M.T)  # the package's M_k acts on columns


@pytest.mark.parametrize("k", [0, 1, 5, -4, 37])
def test_the_shift_matrix_moves_every_position_by_k(k):
    d, n = 16, 80
    E = sinusoidal_encoding(n, d).double()
    M = sinusoidal_shift(k, d).double()
    p = torch.arange(max(0, -k), min(n, n - k))
    torch.testing.assert_close(E[p] @ M.T, E[p + k], atol=1e-6, rtol=0)
    assert sinusoidal_shift(k, d).dtype == torch.float32 and M.shape == (d, d)
    assert torch.count_nonzero(M) <= 2 * d  # block-diagonal: 2 x 2 blocks only


@pytest.mark.parametrize("args, error, message", [
    ((1, 7), ValueError, "d_model must be even"),
    ((1.5, 8), TypeError, "k must be an int"),
    ((1, 0), ValueError, "d_model must be a positive int"),
])
def test_shift_matrix_misuse(args, error, message):
    with pytest.raises(error, match=message):
        sinusoidal_shift(*args)


def test_module_adds_the_table_and_does_not_save_it():
    pe = SinusoidalPositionalEncoding(8, max_len=20)
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(pe(x), x + sinusoidal_encoding(20, 8)[:5])
    assert "encoding" not in pe.state_dict() and len(list(pe.parameters())) == 0


def test_learned_embedding_is_trainable():
    pe = LearnedPositionalEmbedding(10, 4)
    x = torch.zeros(1, 3, 4)
    pe(x).sum().backward()
    assert pe.embedding.weight.grad[:3].abs().sum() > 0 and pe.embedding.weight.grad[3:].abs().sum() == 0
