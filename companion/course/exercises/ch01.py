"""Chapter 1 exercises: soft and hard argmax, a soft key-value lookup, self-attention.

Each exercise has a reference solution (what the book shows in its solution dropdown) and
checks that raise :class:`Mismatch` with the case, the expected and the actual value, and a
hint. Checks compare against PyTorch's own functions, never against the solution itself.
"""

from __future__ import annotations

import torch

from ._core import Exercise, Mismatch, expect_close

# --- reference solutions (shown in the book) --------------------------------------------


def softargmax(scores: torch.Tensor, beta: float = 1.0) -> torch.Tensor:
    """softmax(beta * scores) over the last dimension, computed stably."""
    z = beta * scores
    z = z - z.max(dim=-1, keepdim=True).values  # exp of a big number overflows; shifting changes nothing
    e = torch.exp(z)
    return e / e.sum(dim=-1, keepdim=True)


def hardargmax(scores: torch.Tensor) -> torch.Tensor:
    """One-hot of the (first) maximum over the last dimension."""
    index = scores.argmax(dim=-1, keepdim=True)
    return torch.zeros_like(scores).scatter(-1, index, 1.0)


def soft_lookup(query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, beta: float = 1.0) -> torch.Tensor:
    """query (d,), keys (n, d), values (n, d_v) -> the weighted blend of values (d_v,)."""
    weights = torch.softmax(beta * (keys @ query), dim=-1)  # (n,): how well each key matches
    return weights @ values  # (d_v,)


def self_attention(X: torch.Tensor, beta: float = 1.0) -> torch.Tensor:
    """X (t, d) -> H (t, d): every x_i is a query against all of X; H = A X."""
    A = torch.softmax(beta * (X @ X.T), dim=-1)  # (t, t), row i = weights of query i
    return A @ X


# --- checks -----------------------------------------------------------------------------

_GEN = torch.Generator().manual_seed(1)
_ROWS = torch.randn(4, 5, generator=_GEN)
_X = torch.randn(5, 3, generator=_GEN)


def _softargmax_small(fn):
    s = torch.tensor([1.0, 2.0, 3.0])
    expect_close(fn(s, 1.0), torch.softmax(s, -1), "softargmax([1, 2, 3], beta=1)",
                 "return exp(beta * s_i) / sum_j exp(beta * s_j)")


def _softargmax_beta(fn):
    s = torch.tensor([1.0, 2.0, 3.0])
    expect_close(fn(s, 3.0), torch.softmax(3.0 * s, -1), "softargmax([1, 2, 3], beta=3)",
                 "multiply the scores by beta before exponentiating")


def _softargmax_rows(fn):
    expect_close(fn(_ROWS, 0.5), torch.softmax(0.5 * _ROWS, -1), "softargmax of a (4, 5) batch, beta=0.5",
                 "normalise each row separately: sum over the last dimension (dim=-1, keepdim=True)")


def _softargmax_large(fn):
    s = torch.tensor([1000.0, 1001.0, 1002.0])
    expect_close(fn(s, 1.0), torch.softmax(s, -1), "softargmax([1000, 1001, 1002], beta=1)",
                 "exp(1000) overflows to inf; subtract the largest score first (it cancels out)")


def _hardargmax_small(fn):
    s = torch.tensor([0.1, 0.7, 0.2])
    expect_close(fn(s), torch.tensor([0.0, 1.0, 0.0]), "hardargmax([0.1, 0.7, 0.2])",
                 "return a one-hot vector with the same shape as scores, not the index")


def _hardargmax_rows(fn):
    expected = torch.nn.functional.one_hot(_ROWS.argmax(-1), 5).float()
    expect_close(fn(_ROWS), expected, "hardargmax of a (4, 5) batch",
                 "one 1 per row, at that row's maximum (dim=-1)")


def _hardargmax_ties(fn):
    s = torch.tensor([2.0, 5.0, 5.0, 1.0])
    expect_close(fn(s), torch.tensor([0.0, 1.0, 0.0, 0.0]), "hardargmax([2, 5, 5, 1]) with a tie",
                 "exactly one 1: take the first maximum (torch.argmax), not every entry equal to the max")


def _lookup_small(fn):
    keys = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    values = torch.tensor([[10.0], [20.0], [30.0]])
    q = torch.tensor([2.0, 0.0])
    w = torch.softmax(keys @ q, -1)
    expect_close(fn(q, keys, values, 1.0), w @ values, "3 keys, query [2, 0], beta=1",
                 "weights = softmax(beta * keys @ query); output = weights @ values")


def _lookup_beta(fn):
    keys, values, q = _X, torch.arange(15.0).reshape(5, 3), torch.tensor([1.0, -1.0, 0.5])
    expect_close(fn(q, keys, values, 4.0), torch.softmax(4.0 * (keys @ q), -1) @ values,
                 "5 keys, beta=4", "scale the scores by beta before the softmax")


def _lookup_widths(fn):
    keys, values, q = _X[:, :2], torch.randn(5, 4, generator=torch.Generator().manual_seed(2)), torch.tensor([0.3, 0.9])
    expect_close(fn(q, keys, values, 1.0), torch.softmax(keys @ q, -1) @ values,
                 "keys (5, 2) and values (5, 4)",
                 "the scores compare query with keys; the values are only blended, with weights (n,) @ values (n, d_v)")


def _self_attention_small(fn):
    X = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    expect_close(fn(X, 1.0), torch.softmax(X @ X.T, -1) @ X, "X = [[1, 0], [0, 1], [1, 1]], beta=1",
                 "A = softargmax(beta * X X^T) row by row; H = A X")


def _self_attention_general(fn):
    expect_close(fn(_X, 0.7), torch.softmax(0.7 * (_X @ _X.T), -1) @ _X, "X of shape (5, 3), beta=0.7",
                 "row i of A holds query i's weights: normalise over the last dimension, then H = A @ X (t, d)")


def _self_attention_weights_sum_to_one(fn):
    X = torch.ones(4, 3)  # every query matches every key equally: H must equal X
    expect_close(fn(X, 2.0), X, "X with 4 identical rows", "each row of A must sum to 1 (a weighted average)")


EXERCISES = (
    Exercise("ch01-softargmax", "soft argmax with inverse temperature", "softargmax",
             (_softargmax_small, _softargmax_beta, _softargmax_rows, _softargmax_large), softargmax),
    Exercise("ch01-hardargmax", "hard argmax (one-hot)", "hardargmax",
             (_hardargmax_small, _hardargmax_rows, _hardargmax_ties), hardargmax),
    Exercise("ch01-soft-lookup", "a soft key-value lookup", "soft_lookup",
             (_lookup_small, _lookup_beta, _lookup_widths), soft_lookup),
    Exercise("ch01-self-attention", "parameter-free self-attention", "self_attention",
             (_self_attention_small, _self_attention_general, _self_attention_weights_sum_to_one), self_attention),
)

__all__ = ["EXERCISES", "softargmax", "hardargmax", "soft_lookup", "self_attention", "Mismatch"]
