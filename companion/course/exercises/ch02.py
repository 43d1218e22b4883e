"""Chapter 2 exercises: one query step by step, permutation equivariance, cross-attention,
a padding mask from lengths, and masked attention.

Checks compare with values computed by hand or by plain PyTorch, never with the solutions.
Beside the easy case each exercise has the cases where a shortcut is right by luck: t_q = t_k,
d_k = d_v, a batch of 1, a single query, a mask of the opposite convention, a fully masked row.
"""

from __future__ import annotations

import math

import torch

from ._core import (Allows, Exercise, Mismatch, call, draws, expect_close, expect_equal, expect_gradient,
                    expect_gradients_reach)

# --- reference solutions (shown in the book) ------------------------------------


def attend_one(X, i, W_q, W_k, W_v):
    """z_i for token i: X (t, d_model), W_q and W_k (d_model, d_k), W_v (d_model, d_v) -> (d_v,)."""
    q_i = X[i] @ W_q                  # (d_k,): what token i is looking for
    K, V = X @ W_k, X @ W_v           # (t, d_k), (t, d_v): every token's key and value
    d_k = W_q.shape[-1]
    scores = K @ q_i / math.sqrt(d_k)  # (t,): s_j = q_i . k_j / sqrt(d_k)
    a = torch.softmax(scores, dim=-1)  # (t,): one weight per token j, summing to 1
    return a @ V                       # (d_v,): z_i = sum_j a_j v_j


def equivariance_gap(f, X, perm):
    """max |f(X permuted) - f(X) permuted| over every entry; tokens are on dim -2."""
    permuted_then_f = f(X[..., perm, :])  # permute the tokens, then apply f
    f_then_permuted = f(X)[..., perm, :]  # apply f, then permute its outputs
    return (permuted_then_f - f_then_permuted).abs().max()


def cross_attention(Y, X, W_q, W_k, W_v):
    """Queries from Y (..., t_q, d_model), keys and values from X (..., t_k, d_src) -> (..., t_q, d_v)."""
    Q = Y @ W_q                        # (..., t_q, d_k)
    K, V = X @ W_k, X @ W_v            # (..., t_k, d_k), (..., t_k, d_v)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])  # (..., t_q, t_k)
    A = torch.softmax(scores, dim=-1)  # each query's weights over the t_k keys
    return A @ V                       # (..., t_q, d_v)


def lengths_to_mask(lengths, t_k):
    """lengths int (batch,) -> bool (batch, 1, t_k), True at real tokens (may attend)."""
    positions = torch.arange(t_k, device=lengths.device)  # (t_k,)
    return (positions < lengths[:, None])[:, None, :]      # (batch, 1, t_k)


def masked_attention(Q, K, V, mask):
    """softmax(Q K^T / sqrt(d_k)) V where mask (True = may attend) allows; a row with no key gives 0."""
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])  # (..., t_q, t_k)
    scores = scores.masked_fill(~mask, float("-inf"))          # masked keys: weight exactly 0
    A = torch.softmax(scores, dim=-1)   # a row whose keys are all masked is 0/0 = NaN here ...
    has_key = mask.any(dim=-1, keepdim=True)  # (..., t_q, 1): may this query attend at all?
    A = torch.where(has_key, A, 0.0)    # ... so it gets zero weights, and its output is 0
    return A @ V                        # (..., t_q, d_v)


# --- checks -----------------------------------------------------------------------

_randn = draws(2)  # the module's constants, drawn once at import; each check makes its own


def _attention(Q, K, V, mask=None):
    """Plain PyTorch: the expected values (a fully masked row gives zeros)."""
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0) @ V


# attend_one --------------------------------------------------------------------

_X3 = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 2.0], [1.0, 1.0, 1.0, 1.0]])  # t = 3, d_model = 4
_WQ3 = torch.tensor([[1.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 1.0]])  # (4, 3)
_WK3 = torch.tensor([[0.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
_WV3 = torch.tensor([[0.0, 2.0, 0.0], [0.0, 3.0, 0.0], [1.0, 0.0, 3.0], [1.0, 1.0, 0.0]])
_WIDE = (_randn(6, 5), _randn(5, 2), _randn(5, 2), _randn(5, 3))  # X (6, 5); d_k = 2, d_v = 3


def _one(fn, X, i, W_q, W_k, W_v, case, hint):
    got = call(fn, case, hint, X=X, i=i, W_q=W_q, W_k=W_k, W_v=W_v)
    expected = _attention(X[i] @ W_q, X @ W_k, X @ W_v)
    expect_close(got, expected, case, hint)
    return got


def _one_small(fn):
    _one(fn, _X3, 0, _WQ3, _WK3, _WV3, "the 3-token example, d_k = 3, token i = 0",
         "q_i = X[i] @ W_q; k_j = X[j] @ W_k; s_j = q_i . k_j / sqrt(d_k); a = softmax(s); z_i = sum_j a_j v_j")


def _one_last_token(fn):
    _one(fn, _X3, 2, _WQ3, _WK3, _WV3, "the 3-token example, token i = 2 (the last one)",
         "the query comes from token i (X[i] @ W_q); the keys and values from every token")


def _one_widths(fn):
    X, W_q, W_k, W_v = _WIDE
    _one(fn, X, 4, W_q, W_k, W_v, "t = 6 tokens, d_model = 5, d_k = 2, d_v = 3, token i = 4",
         "divide by sqrt(d_k), the width of q and k (W_q.shape[1]), not sqrt(d_model) nor sqrt(d_v); "
         "keys from W_k, values from W_v; the result has d_v entries")


def _one_single_token(fn):
    X, W_q, W_k, W_v = _WIDE
    _one(fn, X[:1], 0, W_q, W_k, W_v, "a single token (t = 1): z_0 must be its own value x_0 W_v",
         "softmax over the keys (one weight per token j), and the result has shape (d_v,), not (1, d_v)")


def _one_value_width_one(fn):
    X, W_q, W_k, W_v = _WIDE
    _one(fn, X, 2, W_q, W_k, W_v[:, :1], "d_v = 1 (W_v of shape (5, 1)): the result has shape (1,)",
         "return shape (d_v,) even when d_v = 1: .squeeze() removes every dimension of size 1 (here the "
         "result's only one); index or squeeze one named dimension")
    _one(fn, X[:1], 0, W_q, W_k, W_v[:, :1], "a single token and d_v = 1: the result has shape (1,)",
         "return shape (d_v,) even when t = 1 and d_v = 1: a .squeeze() without a dimension returns a 0-dim "
         "tensor here")


def _one_large_scores(fn):
    X = torch.tensor([[30.0, 0.0], [0.0, 30.0], [20.0, 20.0]])
    W = torch.eye(2) * 3
    _one(fn, X, 2, W, W, torch.eye(2), "scores up to 7200 / sqrt(2)",
         "exp of a score this large overflows to inf: use torch.softmax (or subtract the maximum score first)")


def _one_float64(fn):
    X, W_q, W_k, W_v = (w.double() for w in _WIDE)
    _one(fn, X, 1, W_q, W_k, W_v, "float64 inputs", "compute in the inputs' dtype all the way")


def _one_gradients(fn):
    case = "X, W_q, W_k and W_v requiring gradients (the tokens and the projections are learned)"
    hint = "stay in PyTorch operations (no .numpy(), .item(), .tolist(), .detach() or torch.no_grad())"
    X, W_q, W_k, W_v = _WIDE
    X, W_q, W_k, W_v = (w.clone().requires_grad_(True) for w in (X, W_q, W_k, W_v))
    got = _one(fn, X, 3, W_q, W_k, W_v, case, hint)
    expect_gradients_reach((got,), {"X": X, "W_q": W_q, "W_k": W_k, "W_v": W_v}, case, hint)


# equivariance_gap -----------------------------------------------------------------


def _self_attend(X):  # parameter-free self-attention over the tokens on dim -2
    return torch.softmax(X @ X.transpose(-2, -1), dim=-1) @ X


def _cumsum(X):  # a running sum over the tokens: it knows their order
    return X.cumsum(dim=-2)


class _Named:
    """An ``f`` for the checks that ``Allows`` draws, named in their messages (a function's repr
    holds its address, which changes from run to run)."""

    def __init__(self, f, name):
        self.f, self.name = f, name

    def __call__(self, X):
        return self.f(X)

    def __repr__(self):
        return self.name

    def __deepcopy__(self, memo):  # it holds no state: `call` compares the input with itself
        return self


def _gap(fn, f, X, perm, expected, case, hint, atol=None, dtype=None):
    """``dtype``: the dtype of f's output (the result's, as the statement says); default X's."""
    got = call(fn, case, hint, f=f, X=X, perm=perm)
    expect_close(got, torch.as_tensor(expected, dtype=dtype or X.dtype), case, hint, atol=atol)


def _gap_order_aware(fn):
    X = torch.tensor([[1.0], [2.0], [4.0]])
    # cumsum(X[perm]) = [4, 5, 7]; cumsum(X)[perm] = [7, 1, 3]: differences 3, 4, 4
    _gap(fn, _cumsum, X, torch.tensor([2, 0, 1]), 4.0,
         "f = running sum over tokens, X = [[1], [2], [4]], perm = [2, 0, 1]: f(X[perm]) = [4, 5, 7], "
         "f(X)[perm] = [7, 1, 3]",
         "compare f(X[perm]) with f(X)[perm] (the same perm both times, not its inverse) and return "
         "the largest absolute difference, a 0-dim tensor")


def _gap_sign(fn):
    X = torch.tensor([[-5.0], [9.0], [-1.0]])
    # cumsum(X[perm]) = [-1, -6, 3]; cumsum(X)[perm] = [3, -5, 4]: differences -4, -1, -1
    _gap(fn, _cumsum, X, torch.tensor([2, 0, 1]), 4.0,
         "f = running sum, X = [[-5], [9], [-1]], perm = [2, 0, 1]: differences -4, -1, -1",
         "the largest *absolute* difference: .abs() before .max()")


def _gap_equivariant(fn):
    X = draws(25)(5, 3)
    _gap(fn, _self_attend, X, torch.tensor([3, 0, 4, 1, 2]), 0.0,
         "f = parameter-free self-attention on (5, 3): permutation equivariant, the gap is about 0",
         "apply the permutation to the tokens (rows, dim -2), not to the features", atol=1e-5)


def _gap_batched(fn):
    X = torch.tensor([[[1.0, 0.0], [2.0, 1.0], [3.0, 0.0]], [[0.0, 1.0], [0.0, -2.0], [5.0, 5.0]]])
    perm = torch.tensor([1, 2, 0])
    expected = (_cumsum(X[:, perm]) - _cumsum(X)[:, perm]).abs().max()
    _gap(fn, _cumsum, X, perm, expected, "a batch X of shape (2, 3, 2), f = running sum over tokens",
         "the tokens are on dim -2 whatever the batch dimensions: X[..., perm, :], not X[perm] (that "
         "permutes the batch); and the gap is one number, the largest absolute difference of any entry "
         "(not a distance per token)")


def _gap_two_batch_dims(fn):
    X = torch.arange(24.0).reshape(2, 2, 3, 2).sin()
    perm = torch.tensor([2, 0, 1])
    expected = (_cumsum(X[:, :, perm]) - _cumsum(X)[:, :, perm]).abs().max()
    _gap(fn, _cumsum, X, perm, expected, "X of shape (2, 2, 3, 2): two batch dimensions",
         "the tokens are on dim -2 however many batch dimensions come first: X[..., perm, :]")


def _gap_new_width(fn):
    W = torch.tensor([[1.0, -1.0, 0.0], [2.0, 0.0, 1.0]])  # (2, 3): f changes the width
    X = torch.tensor([[1.0, 2.0], [0.0, 1.0], [3.0, -1.0], [2.0, 2.0]])
    perm = torch.tensor([3, 2, 1, 0])
    f = lambda X: (X @ W).cumsum(dim=-2)  # noqa: E731 - (..., t, 2) -> (..., t, 3)
    expected = (f(X[perm]) - f(X)[perm]).abs().max()
    _gap(fn, f, X, perm, expected, "f maps (4, 2) to (4, 3) (its output is wider than X)",
         "permute f's output along the tokens (dim -2) too; its feature width may differ from X's")


def _gap_float64(fn):
    X = torch.tensor([[0.1], [0.2], [0.3]], dtype=torch.float64)
    perm = torch.tensor([1, 2, 0])
    expected = (_cumsum(X[perm]) - _cumsum(X)[perm]).abs().max()  # 0.5, to float64's precision
    _gap(fn, _cumsum, X, perm, expected, "float64 X, f = running sum",
         "return a 0-dim tensor in X's dtype (no .item(), no float(...))")


def _gap_dtype_of_f(fn):
    X = torch.tensor([[0.5], [1.5], [-2.0]])  # float32
    perm = torch.tensor([2, 0, 1])
    f = lambda X: _cumsum(X.double())  # noqa: E731 - float32 in, float64 out
    expected = (f(X[perm]) - f(X)[perm]).abs().max()
    _gap(fn, f, X, perm, expected, "float32 X, f returns float64 (a running sum in float64)",
         "the result is in the dtype of f's output, as the statement says: compute the difference of f's "
         "outputs and do not convert it to X's dtype", dtype=torch.float64)


# cross_attention --------------------------------------------------------------------


def _cross(fn, Y, X, W_q, W_k, W_v, case, hint):
    got = call(fn, case, hint, Y=Y, X=X, W_q=W_q, W_k=W_k, W_v=W_v)
    expect_close(got, _attention(Y @ W_q, X @ W_k, X @ W_v), case, hint)
    return got


_CROSS = (_randn(3, 4), _randn(5, 6), _randn(4, 2), _randn(6, 2), _randn(6, 3))  # t_q 3, t_k 5, d_k 2, d_v 3


def _cross_small(fn):
    Y = torch.tensor([[1.0, 0.0], [0.0, 1.0]])                     # t_q = 2 target tokens
    X = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]])  # t_k = 4 source tokens
    eye = torch.eye(2)
    _cross(fn, Y, X, eye, eye, eye, "2 queries, 4 keys, every W the identity",
           "Q = Y W_q, K = X W_k, V = X W_v; A = softmax(Q K^T / sqrt(d_k)) over the keys; output A V has "
           "one row per query (t_q rows)")


def _cross_widths(fn):
    _cross(fn, *_CROSS, "t_q = 3, t_k = 5, d_model = 4, d_src = 6, d_k = 2, d_v = 3",
           "queries from Y, keys *and values* from X; divide by sqrt(d_k), the projections' width "
           "(W_q.shape[-1], not Q.size(1) when Q has a batch axis); the output is "
           "(t_q, d_v); nothing may be reshaped with the query's length")


def _cross_same_length(fn):
    randn = draws(21)
    Y, X = randn(4, 3), randn(4, 3)
    W_q, W_k, W_v = (randn(3, 3) for _ in range(3))
    _cross(fn, Y, X, W_q, W_k, W_v, "t_q = t_k = 4 and every width 3 (Y and X still different)",
           "the queries come from Y, the keys and values from X (not the other way round)")


def _cross_one_query(fn):
    Y, X, W_q, W_k, W_v = _CROSS
    _cross(fn, Y[:1], X, W_q, W_k, W_v, "a single query (t_q = 1) over 5 keys",
           "softmax over the keys, the last dimension (dim=-1): over the queries a single row becomes all ones")


def _cross_batched(fn):
    Y, X, W_q, W_k, W_v = _CROSS
    Yb, Xb = torch.stack([Y, -Y]), torch.stack([X, 2 * X])  # (2, 3, 4), (2, 5, 6)
    _cross(fn, Yb, Xb, W_q, W_k, W_v, "a batch: Y (2, 3, 4), X (2, 5, 6)",
           "with a batch axis in front, read sizes from the end: d_k is Q.shape[-1] (Q.size(1) is t_q), and "
           "K's last two dimensions are transposed with K.transpose(-2, -1) or K.mT (K.T reverses every "
           "dimension of a 3-D tensor)")


def _cross_batch_of_one(fn):
    Y, X, W_q, W_k, W_v = _CROSS
    _cross(fn, Y[None], X[None], W_q, W_k, W_v, "a batch of 1: Y (1, 3, 4), X (1, 5, 6)",
           "keep the batch dimension (no .squeeze()); transpose the last two dimensions only")


def _cross_float64_gradients(fn):
    case = "float64 inputs, Y, X, W_q, W_k and W_v requiring gradients"
    hint = "compute in the inputs' dtype, in PyTorch operations (no .detach(), .numpy() or torch.no_grad())"
    inputs = {name: w.double().clone().requires_grad_(True)
              for name, w in zip(("Y", "X", "W_q", "W_k", "W_v"), _CROSS)}
    got = _cross(fn, **inputs, case=case, hint=hint)
    expect_gradients_reach((got,), inputs, case, hint)


# lengths_to_mask ----------------------------------------------------------------------


def _mask(fn, lengths, t_k, expected, case, hint):
    expect_equal(call(fn, case, hint, lengths=lengths, t_k=t_k), expected, case, hint)


def _bool(rows):
    return torch.tensor(rows, dtype=torch.bool)[:, None, :]


def _mask_small(fn):
    _mask(fn, torch.tensor([3, 1]), 4, _bool([[1, 1, 1, 0], [1, 0, 0, 0]]), "lengths [3, 1], t_k = 4",
          "True at the real tokens (position < length: they may be attended), False at padding; shape "
          "(batch, 1, t_k)")


def _mask_wider(fn):
    _mask(fn, torch.tensor([2, 2]), 5, _bool([[1, 1, 0, 0, 0]] * 2), "lengths [2, 2], t_k = 5 (longer than both)",
          "the mask has t_k columns, the padded length of the keys, even when every sequence is shorter")


def _mask_empty_and_full(fn):
    _mask(fn, torch.tensor([0, 3, 2]), 3, _bool([[0, 0, 0], [1, 1, 1], [1, 1, 0]]),
          "lengths [0, 3, 2], t_k = 3 (an empty sequence and a full one)",
          "position p is real when p < length: none for length 0, all for length t_k")


def _mask_broadcasts(fn):
    # batch = t_q = 3: a (batch, t_k) mask would broadcast silently against the *queries* axis
    _mask(fn, torch.tensor([1, 2, 3]), 3, _bool([[1, 0, 0], [1, 1, 0], [1, 1, 1]]),
          "lengths [1, 2, 3], t_k = 3",
          "return shape (batch, 1, t_k): the 1 lines the mask up with the queries of scores (batch, t_q, t_k). "
          "A (batch, t_k) mask broadcasts as (1, batch, t_k), which silently masks the wrong sequence "
          "when batch equals t_q")


def _mask_small_int_dtype(fn):
    _mask(fn, torch.tensor([0, 200, 255], dtype=torch.uint8), 300,
          torch.arange(300)[None, None, :] < torch.tensor([0, 200, 255])[:, None, None],
          "uint8 lengths [0, 200, 255], t_k = 300 (more positions than uint8 can count)",
          "compare positions and lengths in a dtype that holds t_k: torch.arange(t_k, dtype=lengths.dtype) "
          "wraps around at 256 in uint8; torch.arange(t_k) (int64) compared with lengths is safe")


def _mask_batch_of_one(fn):
    _mask(fn, torch.tensor([2], dtype=torch.int32), 3, _bool([[1, 1, 0]]), "a batch of 1, lengths int32 [2], t_k = 3",
          "a bool tensor (dtype=torch.bool) of shape (1, 1, 3), whatever the integer dtype of lengths")


# masked_attention ---------------------------------------------------------------------


def _masked(fn, Q, K, V, mask, case, hint):
    got = call(fn, case, hint, Q=Q, K=K, V=V, mask=mask)
    expect_close(got, _attention(Q, K, V, mask), case, hint)
    return got


_QKV = (_randn(2, 3, 4), _randn(2, 5, 4), _randn(2, 5, 2))  # batch 2, t_q 3, t_k 5, d_k 4, d_v 2


def _masked_nothing_masked(fn):
    Q, K, V = _QKV
    _masked(fn, Q, K, V, torch.ones(3, 5, dtype=torch.bool), "every key allowed: t_q = 3, t_k = 5, d_k = 4, d_v = 2",
            "scores = Q K^T / sqrt(d_k) of shape (..., t_q, t_k); softmax over the keys (dim=-1); then @ V")


def _masked_padding(fn):
    Q, K, V = _QKV
    mask = torch.tensor([[True, True, True, False, False], [True, True, True, True, True]])[:, None, :]
    _masked(fn, Q, K, V, mask, "a padding mask (2, 1, 5): sequence 0 has 3 real keys",
            "True = may attend: give the keys where the mask is False (not True) zero weight, e.g. "
            "scores.masked_fill(~mask, float('-inf')) before the softmax")


def _masked_causal(fn):
    randn = draws(22)
    Q, K, V = randn(2, 4, 3), randn(2, 4, 3), randn(2, 4, 5)
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    _masked(fn, Q, K, V, mask, "a causal (4, 4) mask for a batch of 2",
            "query i may attend to keys 0..i only; the (t_q, t_k) mask broadcasts over the batch")


def _masked_padding_content(fn):
    Q, K, V = _QKV
    mask = torch.tensor([[True, True, False, False, False]] * 2)[:, None, :]
    V = V.clone()
    V[:, 2:] = 1e30  # huge values at padding must get exactly zero weight
    _masked(fn, Q, K, V, mask, "values of 1e30 at the masked keys",
            "a masked key must get weight exactly 0 (-inf before the softmax), so its value cannot leak in; "
            "a large negative number such as -1e4 or -30 leaves a tiny weight, and 1e30 times it is not small")


def _masked_low_scores(fn):
    Q = torch.tensor([[[-10.0, -10.0]]])  # one query whose allowed scores are far below zero
    K = torch.tensor([[[10.0, 10.0], [9.0, 9.0], [-10.0, -10.0]]])
    V = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [5.0, 5.0]]])
    mask = torch.tensor([[[True, True, False]]])  # the masked key has the largest score by far
    _masked(fn, Q, K, V, mask, "allowed scores about -141 and -127, the masked key's +141",
            "set masked scores to -inf before the softmax: a finite fill (-30, -1e4) can exceed the allowed "
            "scores, and masking after the softmax loses the allowed weights to underflow")


def _masked_rows_of_different_scale(fn):
    Q, K, V = torch.tensor([[100.0], [-100.0]]), torch.tensor([[1.0], [2.0]]), torch.tensor([[1.0], [0.0]])
    _masked(fn, Q, K, V, torch.ones(2, 2, dtype=torch.bool), "queries [100] and [-100], keys [1] and [2]: "
            "scores [100, 200] in row 0 and [-100, -200] in row 1",
            "normalise each query's row by its own maximum (a softmax over dim=-1 does): the maximum of the "
            "whole matrix, 200, leaves exp(-300) = 0 for every key of row 1")


def _masked_full_row(fn):
    randn = draws(23)
    Q, K, V = randn(1, 3, 2), randn(1, 4, 2), randn(1, 4, 3)
    mask = torch.tensor([[True, True, False, False], [False, False, False, False], [True, True, True, True]])
    _masked(fn, Q, K, V, mask, "query 1 may attend to no key at all (a fully masked row)",
            "softmax over a row of -inf is 0/0 = NaN; return zeros for such a row (torch.nan_to_num, or "
            "torch.where on mask.any(dim=-1, keepdim=True))")


def _masked_single_key_row(fn):
    randn = draws(24)
    Q, K, V = randn(3, 2), randn(3, 2), randn(3, 4)
    mask = torch.tensor([[False, True, False], [True, False, False], [False, False, True]])
    _masked(fn, Q, K, V, mask, "each query may attend to exactly one key (unbatched, t = 3)",
            "with one allowed key a query must return exactly that key's value")


def _masked_gradients(fn):
    case = "gradients with a fully masked query row (query 1 of 3)"
    hint = ("training backpropagates through attention: stay in PyTorch operations (no .detach(), "
            "torch.no_grad()). A NaN in a fully masked row is harmless only if nothing carries it back "
            "to Q, K or V: replace the row with torch.where (as the reference does after filling with "
            "-inf), never multiply it by 0 (NaN * 0 is NaN, in the values and the gradients); or fill "
            "with torch.finfo(dtype).min, so that no NaN appears at all")
    randn = draws(26)
    Q0, K0, V0 = randn(3, 2), randn(4, 2), randn(4, 3)
    mask = torch.tensor([[True, False, True, False], [False, False, False, False], [True, True, True, True]])
    Q, K, V = (x.clone().requires_grad_(True) for x in (Q0, K0, V0))
    got = _masked(fn, Q, K, V, mask, case, hint)
    expect_gradient(got, case, hint)
    weights = torch.arange(9.0).reshape(3, 3)
    (got * weights).sum().backward()
    Qr, Kr, Vr = (x.clone().requires_grad_(True) for x in (Q0, K0, V0))
    (_attention(Qr, Kr, Vr, mask) * weights).sum().backward()  # finite: rows with a key only
    for name, mine, ref in (("Q", Q.grad, Qr.grad), ("K", K.grad, Kr.grad), ("V", V.grad, Vr.grad)):
        if mine is None or not bool(torch.isfinite(mine).all()) or not torch.allclose(mine, ref, atol=1e-5):
            shown = "None" if mine is None else mine.tolist()
            raise Mismatch(f"{case}: the gradient with respect to {name} is {shown}, expected "
                           f"{ref.tolist()}. Hint: {hint}")


def _masked_float64(fn):
    Q, K, V = (x.double() for x in _QKV)
    mask = torch.tensor([[True, False, True, False, True]])
    _masked(fn, Q, K, V, mask, "float64 inputs and a (1, 5) mask",
            "compute in the inputs' dtype all the way; the mask broadcasts to (..., t_q, t_k)")



def _masked_square_mask_batch_of_its_size(fn):
    randn = draws(27)
    Q, K, V = randn(2, 2, 3), randn(2, 2, 3), randn(2, 2, 4)
    _masked(fn, Q, K, V, torch.ones(2, 2, dtype=torch.bool).tril(),
            "a causal (2, 2) mask for a batch of 2 with t_q = t_k = 2",
            "a 2-D mask is (t_q, t_k), whatever the batch size: it broadcasts against the scores (..., t_q, t_k) "
            "from the right, so never read its first axis as the batch")


def _masked_half_precision(fn):
    hint = ("fill with -inf (or the dtype's own torch.finfo(dtype).min): -1e4 is larger than an allowed float16 "
            "score of -20000; a fully masked row returns zeros in float16 too")
    Q = torch.tensor([[-200.0], [1.0]], dtype=torch.float16)
    K = torch.tensor([[100.0], [0.0]], dtype=torch.float16)
    V = torch.tensor([[1.0], [2.0]], dtype=torch.float16)
    mask = torch.tensor([[True, False], [False, False]])
    _masked(fn, Q, K, V, mask, "float16: an allowed score of -20000 beside a masked 0, and a fully masked row",
            hint)


def _masked_far_below(fn):
    Q, K, V = torch.tensor([[100.0, 100.0]]), torch.tensor([[-150.0, -150.0], [1.0, 1.0]]), torch.tensor([[3.0, 4.0], [5.0, 6.0]])
    _masked(fn, Q, K, V, torch.tensor([[True, False]]),
            "the allowed key scores about -21,213, the masked one +141",
            "a masked key must get weight exactly 0 whatever the allowed scores are: fill with -inf (or "
            "torch.finfo(dtype).min), not -1e4, which is larger than -21,213 here; and a query with an allowed key "
            "must not lose it")
    Q, K, V = (torch.tensor(v, dtype=torch.float64) for v in ([[1.0]], [[-1e300], [0.0]], [[1.0], [2.0]]))
    _masked(fn, Q, K, V, torch.tensor([[True, False]]),
            "float64, the allowed key scores -1e300 (below float32's range), the masked one 0",
            "fill with -inf, or with the inputs' own torch.finfo(dtype).min: float32's lowest number (-3.4e38) "
            "is larger than a float64 score of -1e300")


EXERCISES = (
    Exercise("ch02-attend-one", "self-attention for one query, step by step", "attend_one",
             (_one_small, _one_last_token, _one_widths, _one_single_token, _one_value_width_one, _one_large_scores,
              _one_float64, _one_gradients), attend_one,
             allows=Allows(lambda randn: {"X": randn(5, 6), "i": 2, "W_q": randn(6, 3), "W_k": randn(6, 3),
                                          "W_v": randn(6, 4)}, half=True, large={"W_q": 30.0})),
    Exercise("ch02-equivariance-gap", "measure permutation equivariance", "equivariance_gap",
             (_gap_order_aware, _gap_sign, _gap_equivariant, _gap_batched, _gap_two_batch_dims, _gap_new_width,
              _gap_float64, _gap_dtype_of_f),
             equivariance_gap,
             # batch dimensions: _gap_two_batch_dims (the gap is one number over the whole batch, so the
             # batched check of Allows, one batch element at a time, does not apply)
             allows=Allows(lambda randn: {"f": _Named(_cumsum, "a running sum over the tokens"), "X": randn(5, 3),
                                          "perm": torch.tensor([3, 0, 4, 1, 2])}, half=True)),
    Exercise("ch02-cross-attention", "cross-attention with t_q != t_k, d_k != d_v", "cross_attention",
             (_cross_small, _cross_widths, _cross_same_length, _cross_one_query, _cross_batched, _cross_batch_of_one,
              _cross_float64_gradients), cross_attention,
             allows=Allows(lambda randn: {"Y": randn(3, 4), "X": randn(5, 6), "W_q": randn(4, 2), "W_k": randn(6, 2),
                                   "W_v": randn(6, 3)},
                    batched=("Y", "X"), half=True, large={"Y": 20.0})),
    Exercise("ch02-lengths-to-mask", "a padding mask from lengths", "lengths_to_mask",
             (_mask_small, _mask_wider, _mask_empty_and_full, _mask_broadcasts, _mask_small_int_dtype,
              _mask_batch_of_one),
             lengths_to_mask),
    Exercise("ch02-masked-attention", "masked attention, fully masked rows included", "masked_attention",
             (_masked_nothing_masked, _masked_padding, _masked_causal, _masked_padding_content, _masked_low_scores,
              _masked_rows_of_different_scale, _masked_full_row, _masked_single_key_row, _masked_gradients,
              _masked_float64, _masked_far_below, _masked_square_mask_batch_of_its_size, _masked_half_precision),
             masked_attention,
             forbidden=("scaled_dot_product_attention", "MultiheadAttention", "multi_head_attention_forward"),
             allows=Allows(lambda randn: {"Q": randn(3, 4), "K": randn(5, 4), "V": randn(5, 2),
                                   "mask": randn(3, 5) > -0.5},
                    batched=("Q", "K", "V", "mask"), half=True, large={"Q": 30.0})),
)

__all__ = ["EXERCISES", "attend_one", "equivariance_gap", "cross_attention", "lengths_to_mask",
           "masked_attention", "Mismatch"]
