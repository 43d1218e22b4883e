"""Chapter 3 exercises: the variance of a dot product, scaled scores, scaling q and k by
d_k^(-1/4) each, and the entropy of attention rows.

Checks compare with values computed by hand or by plain PyTorch, never with the solutions.
Their shapes keep every dimension different (n != d_k, t_q != t_k != d_k) and d_k not a perfect
square, so that the square root of the wrong number, or of a rounded one, does not pass.
"""

from __future__ import annotations

import math

import torch

from ._core import Allows, Exercise, Mismatch, call, draws, expect_close, expect_gradient, expect_gradients_reach

# --- reference solutions (shown in the book) ------------------------------------


def dot_variance(q, k):
    """q, k (n, d_k): n sample pairs -> the sample variance of the n dot products q_i . k_i."""
    dots = (q * k).sum(dim=-1)  # (n,): one dot product per sample
    return dots.var()           # unbiased (divides by n - 1), over the samples


def scaled_scores(Q, K):
    """Q (..., t_q, d_k), K (..., t_k, d_k) -> Q K^T / sqrt(d_k), shape (..., t_q, t_k)."""
    d_k = Q.shape[-1]
    return (Q / math.sqrt(d_k)) @ K.transpose(-2, -1)  # scaled first: no float16 overflow


def prescale(Q, K):
    """(Q, K) each times d_k^(-1/4): their product is Q K^T / sqrt(d_k)."""
    s = Q.shape[-1] ** -0.25
    return Q * s, K * s


def row_entropy(A):
    """A (..., t), rows of attention weights -> entropy of each row in nats, (...)."""
    logs = torch.where(A > 0, A.log(), torch.zeros_like(A))  # 0 log 0 = 0, not NaN
    return -(A * logs).sum(dim=-1)


# --- checks -----------------------------------------------------------------------

# dot_variance ----------------------------------------------------------------------


def _var(fn, q, k, case, hint):
    got = call(fn, case, hint, q=q, k=k)
    expect_close(got, (q * k).sum(-1).var(), case, hint)


def _var_by_hand(fn):
    q = torch.tensor([[1.0, 0.0], [1.0, 1.0], [2.0, 1.0]])
    k = torch.tensor([[1.0, 5.0], [1.0, 2.0], [3.0, 1.0]])  # dot products 1, 3, 7: mean 11/3
    _var(fn, q, k, "3 samples of d_k = 2: dot products 1, 3 and 7, sample variance 28/3",
         "one dot product per sample (sum over d_k, the last axis), then their variance over the n samples, "
         "dividing by n - 1 (torch.var's default)")


def _var_many(fn):
    randn = draws(30)
    q, k = randn(50, 7), randn(50, 7)
    _var(fn, q, k, "n = 50 samples of d_k = 7",
         "the variance is over the samples (the n dot products), not over the d_k components; "
         "q @ k.T would compare every sample with every other")


def _var_unbiased(fn):
    q = torch.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    k = torch.tensor([[1.0, 0.0, 0.0], [5.0, 5.0, 5.0]])  # dot products 2 and 0: variance 2 (n - 1 = 1)
    _var(fn, q, k, "2 samples: dot products 2 and 0, sample variance 2",
         "divide by n - 1, as torch.var does by default (unbiased), not by n")


def _var_large_mean(fn):
    q = torch.tensor([[1000.0, 0.0], [1000.0, 0.0], [1001.0, 0.0]])
    k = torch.tensor([[10.0, 0.0], [10.0, 0.0], [10.0, 0.0]])  # dot products 10000, 10000, 10010
    _var(fn, q, k, "float32 dot products 10,000, 10,000 and 10,010: a large mean, a small spread (variance 33.3)",
         "subtract the mean before squaring (torch.var does): sum(x^2) - n mean^2 subtracts two numbers near "
         "300 million, and float32 keeps about 7 digits")


def _var_large_mean_float64(fn):
    q = torch.tensor([[1e4, 1.0], [1e4, 2.0], [1e4, 4.0]], dtype=torch.float64)
    k = torch.tensor([[1e4, 1.0], [1e4, 1.0], [1e4, 1.0]], dtype=torch.float64)  # dots 1e8 + 1, + 2, + 4
    _var(fn, q, k, "float64 dot products 100,000,001, 100,000,002 and 100,000,004 (variance 7/3)",
         "compute in the inputs' dtype (float32 rounds 100,000,001 to 100,000,000), and subtract the mean "
         "before squaring: sum(x^2) - n mean^2 subtracts two numbers near 3e16, where float64's step is 4")


def _var_large_mean_half(fn):
    hint = ("subtract the mean before squaring: the squares of the dot products themselves, 1,000^2, are "
            "beyond float16's largest number (65504); torch.var does it right")
    q = torch.tensor([[100.0, 0.0], [100.0, 0.0], [101.0, 0.0]], dtype=torch.float16)
    k = torch.tensor([[10.0, 0.0]] * 3, dtype=torch.float16)  # dot products 1000, 1000 and 1010
    expected = torch.tensor(100.0 / 3, dtype=torch.float16)
    case = "float16 dot products 1000, 1000 and 1010 (variance 33.3)"
    expect_close(call(fn, case, hint, q=q, k=k), expected, case, hint)


def _var_mean_not_representable(fn):
    hint = ("the mean of these dot products is not a number of the inputs' dtype: a mean rounded to float16 "
            "(or bfloat16) shifts every deviation; compute in float32 (torch.var does), return the inputs' dtype")
    for dtype, dots, case in ((torch.float16, [2000.0, 2000.0, 2002.0],
                               "float16 dot products 2000, 2000 and 2002 (variance 4/3; their mean is no float16)"),
                              (torch.bfloat16, [1000.0, 1000.0, 1008.0],
                               "bfloat16 dot products 1000, 1000 and 1008 (variance 21.3; their mean is no "
                               "bfloat16)")):
        q = torch.tensor(dots, dtype=dtype)[:, None]
        k = torch.ones(3, 1, dtype=dtype)
        expected = torch.tensor(dots, dtype=torch.float64).var().to(dtype)
        expect_close(call(fn, case, hint, q=q, k=k), expected, case, hint)


def _var_many_half(fn):
    q = (1000.0 + 0.5 * (torch.arange(100) % 3)).to(torch.float16)[:, None]  # 1000, 1000.5, 1001, 1000, ...
    k = torch.ones(100, 1, dtype=torch.float16)
    case = "100 float16 dot products 1000, 1000.5, 1001, 1000, ... (their sum, 100,050, is beyond float16)"
    hint = ("a float16 sum of 100 numbers near 1,000 overflows (float16's largest number is 65504): take the "
            "mean with torch.mean or torch.var, which accumulate in float32, or divide before adding")
    got = call(fn, case, hint, q=q, k=k)
    expect_close(got, (q.double() * k.double()).sum(-1).var().to(torch.float16), case, hint)


def _var_spread_half(fn):
    q = torch.tensor([990.0, 1010.0] * 500, dtype=torch.float16)[:, None]  # dot products 990, 1010, ...
    k = torch.ones(1000, 1, dtype=torch.float16)
    case = ("1000 float16 dot products alternating 990 and 1010 (variance 100.1; their squared deviations "
            "sum to 100,000, beyond float16)")
    hint = ("nothing on the way may overflow float16 (largest number 65504): a two-pass sum of squared "
            "deviations reaches 100,000; torch.var accumulates in float32, or compute in float32 and return float16")
    got = call(fn, case, hint, q=q, k=k)
    expect_close(got, (q.double() * k.double()).sum(-1).var().to(torch.float16), case, hint)


def _var_outlier_half(fn):
    q = torch.zeros(1001, 1, dtype=torch.float16)
    q[500] = 300.0  # one outlier: its squared deviation, about 89,800, is beyond float16
    k = torch.ones(1001, 1, dtype=torch.float16)
    case = ("1001 float16 dot products, all 0 but one 300 (variance 89.9; that one squared deviation, "
            "about 89,800, is beyond float16)")
    hint = ("nothing on the way may overflow float16 (largest number 65504), not even one squared deviation: "
            "torch.var accumulates in float32, or compute in float32 and return float16")
    got = call(fn, case, hint, q=q, k=k)
    expect_close(got, (q.double() * k.double()).sum(-1).var().to(torch.float16), case, hint)


def _var_float64(fn):
    randn = draws(31)
    q, k = randn(20, 5).double(), randn(20, 5).double()
    _var(fn, q, k, "float64 samples", "compute in the inputs' dtype and return a 0-dim tensor (no .item())")


# scaled_scores ---------------------------------------------------------------------


def _scores(fn, Q, K, case, hint):
    got = call(fn, case, hint, Q=Q, K=K)
    expect_close(got, Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), case, hint)
    return got


def _scores_by_hand(fn):
    Q = torch.tensor([[8.0] * 16 + [0.0] * 48, [4.0] * 16 + [2.0] * 48])  # t_q = 2, d_k = 64
    K = torch.tensor([[1.0] * 64, [0.5] * 64, [0.0] * 64])               # t_k = 3
    _scores(fn, Q, K, "d_k = 64, raw scores [[128, 64, 0], [160, 80, 0]], divided by 8",
            "compute Q K^T, shape (t_q, t_k), and divide by sqrt(d_k) = sqrt(64) = 8")


def _scores_shapes(fn):
    randn = draws(32)
    _scores(fn, randn(3, 5), randn(7, 5), "t_q = 3, t_k = 7, d_k = 5",
            "divide by sqrt(d_k) = sqrt(Q.shape[-1]): not d_k itself, not sqrt(t_q) or sqrt(t_k), and not "
            "a rounded root (math.isqrt(5) = 2)")


def _scores_batched(fn):
    randn = draws(33)
    _scores(fn, randn(2, 4, 8), randn(2, 6, 8), "a batch: Q (2, 4, 8), K (2, 6, 8)",
            "d_k is the last dimension, Q.shape[-1] (K.shape[1] is t_k in a batch); transpose the last two "
            "dimensions of K (K.transpose(-2, -1) or K.mT), since K.T reverses them all")


def _scores_heads(fn):
    randn = draws(34)
    _scores(fn, randn(2, 3, 4, 5), randn(2, 3, 6, 5), "4-D inputs (batch, heads, t, d_k) = (2, 3, 4, 5) and (2, 3, 6, 5)",
            "transpose the last two dimensions of K, whatever comes before them: K.transpose(-2, -1), not "
            "permute(0, 2, 1) or transpose(1, -1)")


def _scores_float64_gradients(fn):
    randn = draws(35)
    case = "float64 Q that requires gradients, d_k = 3"
    hint = "compute in the inputs' dtype, in PyTorch operations (no .detach(), .numpy() or torch.no_grad())"
    Q = randn(2, 3).double().requires_grad_(True)
    expect_gradients_reach([_scores(fn, Q, randn(4, 3).double(), case, hint)], {"Q": Q}, case, hint)


def _scores_gradient_to_k(fn):
    randn = draws(42)
    case = "Q and K that both require gradients (W_q and W_k learn through them)"
    hint = "keep K in the graph too: no K.detach(), torch.no_grad() or .numpy() on either input"
    Q, K = randn(3, 5).requires_grad_(True), randn(4, 5).requires_grad_(True)
    got = _scores(fn, Q, K, case, hint)
    expect_gradient(got, case, hint)
    gq, gk = torch.autograd.grad(got.sum(), (Q, K), allow_unused=True)
    if gq is None or gk is None:
        raise Mismatch(f"{case}: no gradient reaches {'Q' if gq is None else 'K'}. Hint: {hint}")
    expect_close(gk, Q.detach().sum(0).expand(4, 5) / math.sqrt(5), case + ", the gradient for K", hint)


def _scores_half_no_overflow(fn):
    Q = K = torch.full((1, 1024), 16.0, dtype=torch.float16)  # d_k = 1024: Q K^T = 262,144 > 65,504
    case = "float16 Q and K full of 16 with d_k = 1024: the product alone (262,144) overflows float16"
    got = call(fn, case, "scale Q (or Q and K) before the product: (Q / sqrt(d_k)) @ K^T stays in "
               "float16's range where Q @ K^T does not", Q=Q, K=K)
    expect_close(got, torch.tensor([[8192.0]], dtype=torch.float16), case,
                 "scale before the product: (Q / sqrt(d_k)) @ K.transpose(-2, -1)")

def _scores_half_cancelling(fn):
    Q = torch.full((1, 4), 1000.0, dtype=torch.float16)
    K = torch.tensor([[1000.0, -1000.0, 1000.0, -1000.0], [1000.0, -1000.0, 1000.0, -990.0]], dtype=torch.float16)
    case = ("float16 Q = [1000, 1000, 1000, 1000] and keys whose products cancel: scores [0, 5000], though each "
            "product term (500,000 after the scale) is beyond float16")
    expect_close(call(fn, case, "use a matrix product (@ or torch.matmul), which accumulates the terms in float32, "
                      "not a float16 elementwise product summed afterwards, whose terms overflow to inf - inf = NaN",
                      Q=Q, K=K),
                 torch.tensor([[0.0, 5000.0]], dtype=torch.float16), case,
                 "use a matrix product (@), not (Q[..., :, None, :] * K[..., None, :, :]).sum(-1) in float16")


# prescale ---------------------------------------------------------------------------


def _pre(fn, Q, K, case, hint):
    got = call(fn, case, hint, Q=Q, K=K)
    if not isinstance(got, tuple) or len(got) != 2:
        raise Mismatch(f"{case}: expected a tuple (Q_scaled, K_scaled), got {type(got).__name__}"
                       f"{'' if not isinstance(got, (tuple, list)) else f' of length {len(got)}'}. Hint: return "
                       "Q_scaled, K_scaled (a tuple)")
    s = Q.shape[-1] ** -0.25
    expect_close(got[0], Q * s, case + ", the scaled Q", hint)
    expect_close(got[1], K * s, case + ", the scaled K", hint)
    return got


def _pre_by_hand(fn):
    _pre(fn, torch.full((2, 16), 2.0), torch.full((3, 16), 4.0), "d_k = 16: d_k^(-1/4) = 1/2",
         "multiply Q and K each by d_k ** -0.25 and return both, as (Q_scaled, K_scaled)")


def _pre_product(fn):
    randn = draws(36)
    Q, K = randn(3, 6), randn(5, 6)
    got = _pre(fn, Q, K, "t_q = 3, t_k = 5, d_k = 6",
               "d_k is the last dimension (Q.shape[-1]), not the length; scale both by d_k ** -0.25, so that "
               "neither carries the whole 1 / sqrt(d_k)")
    expect_close(got[0] @ got[1].T, Q @ K.T / math.sqrt(6), "t_q = 3, t_k = 5, d_k = 6: the product",
                 "the product of the two scaled tensors must be Q K^T / sqrt(d_k)")


def _pre_batched_float64(fn):
    randn = draws(37)
    _pre(fn, randn(2, 3, 10).double(), randn(2, 4, 10).double(), "float64 batches, d_k = 10",
         "compute in the inputs' dtype; d_k is Q.shape[-1] whatever the number of dimensions")


def _pre_gradients(fn):
    randn = draws(38)
    case = "Q and K that require gradients (W_q and W_k learn through them)"
    hint = "stay in PyTorch operations: no .detach(), torch.no_grad() or .numpy()"
    Q, K = randn(2, 4).requires_grad_(True), randn(3, 4).requires_grad_(True)
    got = _pre(fn, Q, K, case, hint)
    expect_gradients_reach([got[0]], {"Q": Q}, case + ", the scaled Q", hint)
    expect_gradients_reach([got[1]], {"K": K}, case + ", the scaled K", hint)


# row_entropy -----------------------------------------------------------------------


def _entropy(fn, A, expected, case, hint, atol=None, rtol=None):
    expect_close(call(fn, case, hint, A=A), expected, case, hint, atol=atol, rtol=rtol)


def _entropy_uniform(fn):
    A = torch.full((2, 4), 0.25)
    _entropy(fn, A, torch.full((2,), math.log(4)), "two uniform rows of 4: entropy log 4 = 1.3863 nats",
             "H(a) = -sum_j a_j log a_j with the natural log (torch.log), summed over the last dimension")


def _entropy_general(fn):
    randn = draws(39)
    A = torch.softmax(randn(3, 5), dim=-1)
    _entropy(fn, A, -(A * A.log()).sum(-1), "3 rows of 5 softmax weights",
             "sum over the last dimension (one entropy per row), with a minus sign")


def _entropy_one_hot(fn):
    A = torch.tensor([[0.0, 1.0, 0.0], [0.5, 0.5, 0.0]])
    _entropy(fn, A, torch.tensor([0.0, math.log(2)]), "rows [0, 1, 0] and [0.5, 0.5, 0] (exact zeros)",
             "0 log 0 is taken as 0: torch.log(0) = -inf and 0 * -inf = NaN, so treat zero weights apart "
             "(torch.where(A > 0, A.log(), 0), or torch.special.xlogy(A, A))")


def _entropy_long_rows(fn):
    A = torch.full((2, 1000), 1e-3)
    A[1, :500], A[1, 500:] = 1.6e-3, 4e-4
    expected = -(A * A.log()).sum(-1)
    _entropy(fn, A, expected, "rows of 1000 small weights (a uniform row has entropy log 1000 = 6.9078)",
             "no clamp or epsilon inside the log: clamp_min(0.01) turns log(0.001) into log(0.01); treat only "
             "exact zeros apart")


def _entropy_batched(fn):
    randn = draws(40)
    A = torch.softmax(randn(2, 3, 4), dim=-1)
    _entropy(fn, A, -(A * A.log()).sum(-1), "weights of shape (2, 3, 4) (batch, t_q, t_k)",
             "the rows are along the last dimension whatever the number of dimensions: the result is (2, 3)")


def _entropy_not_contiguous(fn):
    randn = draws(41)
    A = torch.softmax(randn(2, 4, 3), dim=1).transpose(1, 2)  # rows along the last axis, not contiguous
    _entropy(fn, A, -(A * A.log()).sum(-1), "weights (2, 3, 4) made by a transpose (not contiguous in memory)",
             "view needs contiguous memory: use reshape, or work on the last dimension directly (sum(dim=-1)) "
             "without flattening")


def _entropy_float64(fn):
    A = torch.tensor([[0.1, 0.2, 0.7]], dtype=torch.float64)
    expected = torch.tensor([-(0.1 * math.log(0.1) + 0.2 * math.log(0.2) + 0.7 * math.log(0.7))], dtype=torch.float64)
    _entropy(fn, A, expected, "a float64 row [0.1, 0.2, 0.7]",
             "compute in the input's dtype, and add no epsilon inside the log (it shifts float64 results)")


def _entropy_zeros_half_and_double(fn):
    hint = ("a weight of exactly 0 contributes exactly 0: select it away (torch.where(A > 0, ...) or "
            "torch.special.xlogy(A, A)); an epsilon inside the log is 0 in float16 (log 0 = -inf) and shifts float64")
    A = torch.tensor([[0.0, 1.0], [0.5, 0.5]], dtype=torch.float16)
    _entropy(fn, A, torch.tensor([0.0, math.log(2)], dtype=torch.float16), "float16 rows [0, 1] and [0.5, 0.5]", hint)
    A = torch.tensor([[0.0, 1.0], [0.25, 0.75]], dtype=torch.float64)
    expected = torch.tensor([0.0, -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))], dtype=torch.float64)
    _entropy(fn, A, expected, "float64 rows [0, 1] and [0.25, 0.75]: the first is exactly 0", hint)


def _entropy_tiny_float64(fn):
    A = torch.tensor([[1e-10, 1 - 1e-10]], dtype=torch.float64)
    expected = torch.tensor([-(1e-10 * math.log(1e-10) + (1 - 1e-10) * math.log1p(-1e-10))], dtype=torch.float64)
    _entropy(fn, A, expected, "a float64 row [1e-10, 1 - 1e-10] (entropy 2.4e-9)",
             "no clamp inside the log: clamp_min(1e-6) turns log(1e-10) into log(1e-6); treat only exact zeros apart")
    A = torch.tensor([[1e-20, 1 - 1e-20]], dtype=torch.float64)  # 1 - 1e-20 is 1.0 in float64
    expected = torch.tensor([-1e-20 * math.log(1e-20)], dtype=torch.float64)
    _entropy(fn, A, expected, "a float64 row [1e-20, 1 - 1e-20] (entropy 4.6e-19)",
             "no clamp inside the log, however small: clamp_min(1e-12) turns log(1e-20) into log(1e-12); "
             "treat only exact zeros apart", atol=0.0, rtol=1e-9)  # relative: the entropy itself is tiny
    A = torch.tensor([[1e-35, 1.0]], dtype=torch.float64)  # 1 - 1e-35 is 1.0 in float64
    expected = torch.tensor([-1e-35 * math.log(1e-35)], dtype=torch.float64)
    _entropy(fn, A, expected, "a float64 row [1e-35, 1 - 1e-35] (entropy 8.1e-34)",
             "no epsilon inside the log, however small: log(A + 1e-30) turns log(1e-35) into about log(1e-30); "
             "treat only exact zeros apart", atol=0.0, rtol=1e-9)


def _entropy_tiny_weights(fn):
    hint = ("no epsilon inside the log, not even the dtype's own (torch.finfo(A.dtype).eps): beside weights "
            "this small it shifts every log; treat only exact zeros apart (torch.special.xlogy(A, A))")
    A = torch.cat([torch.full((1000,), 1e-6), torch.tensor([0.999])])[None]
    A64 = A.double()
    _entropy(fn, A, (-(A64 * A64.log()).sum(-1)).float(),
             "a float32 row of 1000 weights 1e-6 and one 0.999 (entropy 0.0148)", hint)
    A = torch.cat([torch.full((100,), 1e-3), torch.tensor([0.9])]).to(torch.float16)[None]
    A64 = A.double()
    _entropy(fn, A, (-(A64 * A64.log()).sum(-1)).to(torch.float16),
             "a float16 row of 100 weights 0.001 and one 0.9 (entropy 0.786)", hint)
    A = torch.cat([torch.full((1000,), 2e-5), torch.tensor([0.98])]).to(torch.float16)[None]
    A64 = A.double()
    _entropy(fn, A, (-(A64 * A64.log()).sum(-1)).to(torch.float16),
             "a float16 row of 1000 weights 2e-5 (below float16's smallest normal number, 6.1e-5) and one 0.98 "
             "(entropy 0.2365)", "no clamp to the smallest normal number (torch.finfo(A.dtype).tiny) either: "
             "float16 holds smaller weights, and their logs count; treat only exact zeros apart")


EXERCISES = (
    Exercise("ch03-dot-variance", "the sample variance of q . k", "dot_variance",
             (_var_by_hand, _var_many, _var_unbiased, _var_large_mean, _var_large_mean_float64, _var_large_mean_half,
              _var_mean_not_representable, _var_many_half, _var_spread_half, _var_outlier_half, _var_float64), dot_variance,
             allows=Allows(lambda randn: {"q": randn(6, 5), "k": randn(6, 5)}, half=True)),
    Exercise("ch03-scaled-scores", "scores divided by sqrt(d_k)", "scaled_scores",
             (_scores_by_hand, _scores_shapes, _scores_batched, _scores_heads, _scores_float64_gradients,
              _scores_gradient_to_k, _scores_half_no_overflow, _scores_half_cancelling), scaled_scores,
             allows=Allows(lambda randn: {"Q": randn(3, 5), "K": randn(4, 5)}, batched=("Q", "K"), half=True)),
    Exercise("ch03-row-entropy", "the entropy of attention rows", "row_entropy",
             (_entropy_uniform, _entropy_general, _entropy_one_hot, _entropy_long_rows, _entropy_batched,
              _entropy_not_contiguous, _entropy_float64, _entropy_zeros_half_and_double, _entropy_tiny_float64, _entropy_tiny_weights), row_entropy,
             allows=Allows(lambda randn: {"A": torch.softmax(randn(6), -1)}, batched=("A",), half=True)),
    Exercise("ch03-prescale", "d_k^(-1/4) on q and on k", "prescale",
             (_pre_by_hand, _pre_product, _pre_batched_float64, _pre_gradients), prescale,
             allows=Allows(lambda randn: {"Q": randn(3, 5), "K": randn(4, 5)}, batched=("Q", "K"), half=True)),
)

__all__ = ["EXERCISES", "dot_variance", "scaled_scores", "prescale", "row_entropy", "Mismatch"]
