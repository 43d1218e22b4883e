"""Chapter 1 exercises: soft and hard argmax, a soft key-value lookup, self-attention.

Each exercise has a reference solution (what the book shows in its solution dropdown and
``show_solution`` prints) and checks that raise :class:`Mismatch` with the case, the
expected and the actual value, and a hint. Checks compare against values computed by hand
or by PyTorch's own functions, never against the solution itself.
"""

from __future__ import annotations

import torch

from ._core import Allows, Exercise, Mismatch, _allclose, call, expect_close, expect_gradient

# --- reference solutions (shown in the book) ------------------------------------


def softargmax(scores, beta=1.0):
    """softmax(beta * scores) over the last dimension, computed stably."""
    # exp of a large number overflows; shifting each row by its max changes nothing.
    # Shift first, then scale: beta * (s - max s) <= 0 even where beta * s overflows
    z = beta * (scores - scores.max(dim=-1, keepdim=True).values)
    e = torch.exp(z)  # a masked score, -inf, gives exactly 0
    return e / e.sum(dim=-1, keepdim=True)


def hardargmax(scores):
    """One-hot of the (first) maximum over the last dimension."""
    index = scores.argmax(dim=-1, keepdim=True)
    return torch.zeros_like(scores).scatter(-1, index, 1.0)


def soft_lookup(query, keys, values, beta=1.0):
    """query (d,), keys (n, d), values (n, d_v) -> blend of the values (d_v,)."""
    weights = torch.softmax(beta * (keys @ query), dim=-1)  # (n,)
    return weights @ values  # (d_v,)


def self_attention(X, beta=1.0):
    """X (..., t, d) -> H (..., t, d), A (..., t, t): every x_i asks all of X."""
    S = X @ X.transpose(-2, -1)             # (..., t, t): S[i, j] = x_i . x_j
    A = torch.softmax(beta * S, dim=-1)     # row i: query i's weights
    return A @ X, A                         # row i of H: sum_j A[i, j] x_j


# --- checks -----------------------------------------------------------------------

_GEN = torch.Generator().manual_seed(1)
_ROWS = torch.randn(4, 5, generator=_GEN)
_X = torch.randn(5, 3, generator=_GEN)
_CUBE = torch.randn(2, 3, 4, generator=_GEN)
_SHIFT = "subtract each row's own maximum (max(dim=-1, keepdim=True)) before exp"


def _softargmax(fn, scores, beta, case, hint):
    got = call(fn, case, hint, scores=scores, beta=beta)
    expect_close(got, torch.softmax(beta * scores, -1), case, hint)


def _softargmax_small(fn):
    _softargmax(fn, torch.tensor([1.0, 2.0, 3.0]), 1.0, "softargmax([1, 2, 3], beta=1)",
                "return exp(beta * s_i) / sum_j exp(beta * s_j)")


def _softargmax_beta(fn):
    _softargmax(fn, torch.tensor([1.0, 2.0, 3.0]), 3.0, "softargmax([1, 2, 3], beta=3)",
                "multiply the scores by beta before exponentiating")


def _softargmax_rows(fn):
    _softargmax(fn, _ROWS, 0.5, "softargmax of a (4, 5) batch, beta=0.5",
                "normalise each row separately: sum over the last dimension (dim=-1, keepdim=True)")


def _softargmax_3d(fn):
    _softargmax(fn, _CUBE, 1.0, "softargmax of a (2, 3, 4) batch",
                "the last dimension is dim=-1, whatever the number of dimensions (dim=1 is not it here)")


def _softargmax_large(fn):
    _softargmax(fn, torch.tensor([1000.0, 1001.0, 1002.0]), 1.0, "softargmax([1000, 1001, 1002], beta=1)",
                "exp(1000) overflows to inf; " + _SHIFT)


def _softargmax_rows_of_different_scale(fn):
    scores = torch.tensor([[1000.0, 1001.0, 1002.0], [-1000.0, -999.0, -998.0], [-500.0, 0.0, 500.0]])
    _softargmax(fn, scores, 1.0,
                "softargmax([[1000, 1001, 1002], [-1000, -999, -998], [-500, 0, 500]]), rows of different scale",
                "shifting by the maximum or minimum of the whole tensor, or by a row's minimum, still "
                "leaves exp(-2000) = 0 or exp(1000) = inf somewhere; " + _SHIFT)


def _softargmax_large_beta(fn):
    scores = torch.tensor([[10.0, 20.0, 30.0], [-30.0, -20.0, -10.0]])
    _softargmax(fn, scores, 5.0, "softargmax([[10, 20, 30], [-30, -20, -10]], beta=5)",
                "exp(150) overflows: what goes into exp must have its maximum at 0, as in "
                "beta * (scores - max) or beta * scores - max(beta * scores) (the same for beta > 0); "
                "beta * scores - max(scores) subtracts the unscaled maximum and is not enough")


def _softargmax_half_precision(fn):
    scores = torch.tensor([[100.0, 101.0], [-3.0, -3.0]], dtype=torch.float16)
    case = "softargmax of float16 scores [[100, 101], [-3, -3]], beta=1000"
    hint = ("1000 * 101 is beyond float16's largest number (65504): subtract each row's maximum first, "
            "then multiply by beta, and keep the input's dtype")
    got = call(fn, case, hint, scores=scores, beta=1000.0)
    expected = torch.softmax(1000.0 * (scores.double() - scores.double().amax(-1, keepdim=True)), -1)
    expect_close(got, expected.to(torch.float16), case, hint)


def _softargmax_half_small_differences(fn):
    scores = torch.tensor([[0.0, 0.0007], [0.0012, 0.0]], dtype=torch.float16)
    case = "softargmax of float16 scores [[0, 0.0007], [0.0012, 0]], beta=1000 (weights about 1/3 and 2/3)"
    hint = ("multiply by beta before exp, as in exp(beta * (scores - max)): exp(scores - max) ** beta raises "
            "float16's rounding of a number near 1 (steps of 0.0005) to the power beta, 1000 times the error")
    got = call(fn, case, hint, scores=scores, beta=1000.0)
    expected = torch.softmax(1000.0 * (scores.double() - scores.double().amax(-1, keepdim=True)), -1)
    expect_close(got, expected.to(torch.float16), case, hint)


def _softargmax_huge_beta(fn):
    scores = torch.tensor([[2.0, 4.0], [-1.0, -3.0]])
    case = "softargmax of float32 [[2, 4], [-1, -3]], beta=1e38 (finite; beta * 4 is not)"
    hint = ("beta * scores overflows float32 here (its largest number is 3.4e38): shift first, then scale, "
            "as in exp(beta * (scores - max)), so that what is multiplied by beta is <= 0")
    expect_close(call(fn, case, hint, scores=scores, beta=1e38), torch.tensor([[0.0, 1.0], [1.0, 0.0]]), case, hint)


def _softargmax_gradients(fn):
    case = "softargmax of a (4, 5) batch that requires gradients"
    hint = ("a model trains through softargmax: stay in PyTorch operations (no .numpy(), .item(), "
            "torch.tensor(...) of computed values, no .detach() of the result or torch.no_grad(); detaching only the "
            "row maximum you subtract is fine, since the softmax does not change with it)")
    scores = _ROWS.clone().requires_grad_(True)
    got = call(fn, case, hint, scores=scores, beta=1.0)
    expect_close(got, torch.softmax(_ROWS, -1), case, hint)
    expect_gradient(got, case, hint)
    weights = torch.arange(20.0).reshape(4, 5)
    (got * weights).sum().backward()
    y = torch.softmax(_ROWS, -1)  # d/ds of sum(y * w) is y * (w - sum(y * w)), row by row
    expected = y * (weights - (y * weights).sum(-1, keepdim=True))
    if scores.grad is None or not _allclose(scores.grad, expected, atol=1e-4, rtol=1e-4):
        raise Mismatch(f"{case}: the gradient through your function is wrong. Hint: {hint}")


def _softargmax_masked(fn):
    inf = float("inf")
    hint = ("a masked score is -inf and gets weight 0: exp(beta * (-inf - max)) is exactly 0, so shift by "
            "each row's maximum and keep -inf as it is (a fill such as -1e4 or -1e9 can beat a real score)")
    rows = torch.tensor([[0.0, -inf, 1.0], [-inf, 2.0, -inf], [-20000.0, -inf, -19999.0]])
    case = "softargmax of [[0, -inf, 1], [-inf, 2, -inf], [-20000, -inf, -19999]], beta=2 (-inf is masked)"
    scores = rows.clone().requires_grad_(True)
    got = call(fn, case, hint, scores=scores, beta=2.0)
    expected = torch.softmax(2.0 * rows.double(), -1).float()
    expect_close(got, expected, case, hint)
    leaked = got.detach()[torch.isinf(rows)]
    if bool((leaked != 0).any()):
        raise Mismatch(f"{case}: the masked scores got weights {[float(w) for w in leaked]}, expected exactly 0. "
                       f"Hint: {hint}; a clamp of the shifted scores (at -12, say) leaves exp(-12) = 6e-6 there")
    expect_gradient(got, case, hint)
    weights = torch.arange(9.0).reshape(3, 3)
    (got * weights).sum().backward()
    y = expected  # d/ds of sum(y * w) is beta * y * (w - sum(y * w)); 0 where the score is masked
    grad = 2.0 * y * (weights - (y * weights).sum(-1, keepdim=True))
    if scores.grad is None or not _allclose(scores.grad, grad, atol=1e-4, rtol=1e-4):
        shown = None if scores.grad is None else [[round(v, 4) for v in r] for r in scores.grad.tolist()]
        raise Mismatch(f"{case}: the values are right, but the gradient through your function is {shown} "
                       f"(expected {[[round(v, 4) + 0.0 for v in r] for r in grad.tolist()]}: 0 at the masked "
                       "scores, no NaN). Hint: leave -inf scores to exp, which gives 0 and a zero gradient; "
                       "torch.where after an exp that overflowed repairs the value but not the gradient")
    far = torch.tensor([[-2e9, -inf, -2e9]])
    case = "softargmax of [[-2e9, -inf, -2e9]], beta=1: a tie between two real scores far below -1e9"
    _softargmax(fn, far, 1.0, case, hint)
    small = torch.tensor([[0.0, -inf, 1.0]])
    case = "softargmax of [[0, -inf, 1]], beta=1e-37: a masked score keeps weight 0 however small beta is"
    got = call(fn, case, hint, scores=small, beta=1e-37)
    expect_close(got, torch.tensor([[0.5, 0.0, 0.5]]), case, hint + "; a finite fill such as "
                 "torch.finfo(dtype).min times a tiny beta is close to 0, and its weight is not")
    if bool(got.detach()[0, 1] != 0):
        raise Mismatch(f"{case}: the masked score got weight {float(got.detach()[0, 1])}, expected exactly 0. "
                       f"Hint: {hint}")


def _softargmax_float64(fn):
    _softargmax(fn, _ROWS.double(), 2.0, "softargmax of a float64 (4, 5) batch, beta=2",
                "return the input's dtype")


def _hardargmax(fn, scores, expected, case, hint):
    expect_close(call(fn, case, hint, scores=scores), expected, case, hint)


def _hardargmax_small(fn):
    _hardargmax(fn, torch.tensor([0.1, 0.7, 0.2]), torch.tensor([0.0, 1.0, 0.0]), "hardargmax([0.1, 0.7, 0.2])",
                "return a one-hot tensor with the same shape and dtype as scores, not the index")


def _hardargmax_rows(fn):
    expected = torch.nn.functional.one_hot(_ROWS.argmax(-1), 5).to(_ROWS.dtype)
    _hardargmax(fn, _ROWS, expected, "hardargmax of a (4, 5) batch", "one 1 per row, at that row's maximum (dim=-1)")


def _hardargmax_3d(fn):
    expected = torch.nn.functional.one_hot(_CUBE.argmax(-1), 4).to(_CUBE.dtype)
    _hardargmax(fn, _CUBE, expected, "hardargmax of a (2, 3, 4) batch",
                "the last dimension is dim=-1, whatever the number of dimensions")


def _hardargmax_ties(fn):
    _hardargmax(fn, torch.tensor([2.0, 5.0, 5.0, 1.0]), torch.tensor([0.0, 1.0, 0.0, 0.0]),
                "hardargmax([2, 5, 5, 1]) with a tie",
                "exactly one 1: take the first maximum (torch.argmax), not every entry equal to the max")


def _hardargmax_many_ties(fn):
    scores = torch.tensor([[5.0, 5.0, 5.0, 5.0, 1.0, 5.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    expected = torch.zeros(2, 6)
    expected[:, 0] = 1.0
    _hardargmax(fn, scores, expected, "hardargmax([[5, 5, 5, 5, 1, 5], [0, 0, 0, 0, 0, 0]]), many ties",
                "on a tie the first maximum wins, as torch.argmax does (topk and sort do not promise which "
                "of equal values comes first)")
    wide = torch.full((3, 100), 2.0)
    expected = torch.zeros(3, 100)
    expected[:, 0] = 1.0
    _hardargmax(fn, wide, expected, "hardargmax of 3 rows of 100 equal scores",
                "on a tie the first maximum wins, as torch.argmax does (topk and sort do not promise which "
                "of equal values comes first)")


def _hardargmax_near_ties(fn):
    scores = torch.tensor([[1.0, 1.0 + 1e-9, 0.5], [3.0, 3.0 - 1e-12, 3.0 - 1e-12]], dtype=torch.float64)
    expected = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
    _hardargmax(fn, scores, expected, "hardargmax of float64 [[1, 1 + 1e-9, 0.5], [3, 3 - 1e-12, 3 - 1e-12]]",
                "only equal values tie: 1 + 1e-9 is larger than 1, however little; compare with the maximum "
                "exactly (argmax does), not within a tolerance")
    nearly = torch.nextafter(torch.tensor(1.0), torch.tensor(2.0))  # the float32 just above 1
    scores = torch.stack([torch.tensor(1.0), nearly, torch.tensor(1.0)])
    _hardargmax(fn, scores, torch.tensor([0.0, 1.0, 0.0]), "hardargmax of float32 [1, 1 + 1.2e-7, 1]",
                "only equal values tie: the float32 just above 1 is the maximum; compare exactly, not within "
                "a tolerance")


def _hardargmax_infinite(fn):
    inf = float("inf")
    scores = torch.tensor([[1.0, inf, 2.0], [-inf, 3.0, -inf], [-inf, -inf, -5.0]])
    expected = torch.tensor([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    _hardargmax(fn, scores, expected, "hardargmax of [[1, inf, 2], [-inf, 3, -inf], [-inf, -inf, -5]] (masked "
                "scores are -inf)", "inf - inf is NaN, so a test such as scores - max == 0 misses an infinite "
                "maximum: compare scores == max, or take torch.argmax")
    big = torch.finfo(torch.float16).max
    _hardargmax(fn, torch.tensor([[-float("inf"), -big], [big, float("inf")]], dtype=torch.float16),
                torch.tensor([[0.0, 1.0], [0.0, 1.0]], dtype=torch.float16),
                "float16 [[-inf, -65504], [65504, inf]]: an infinity beside the largest finite number",
                "-inf is below every finite number and inf above it: do not replace them (nan_to_num turns "
                "them into the largest finite numbers, which then tie)")


def _hardargmax_float64(fn):
    scores = torch.tensor([[3.0, -1.0], [0.5, 4.0]], dtype=torch.float64)
    _hardargmax(fn, scores, torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64),
                "hardargmax of a float64 (2, 2) batch",
                "the one-hot must have the scores' dtype (F.one_hot gives int64: convert with .to(scores.dtype))")


def _lookup(fn, query, keys, values, beta, case, hint):
    got = call(fn, case, hint, query=query, keys=keys, values=values, beta=beta)
    expect_close(got, torch.softmax(beta * (keys @ query), -1) @ values, case, hint)


def _lookup_small(fn):
    keys = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    values = torch.tensor([[10.0], [20.0], [30.0]])
    _lookup(fn, torch.tensor([2.0, 0.0]), keys, values, 1.0, "3 keys, query [2, 0], beta=1",
            "weights = softargmax(beta * keys @ query); output = weights @ values")


def _lookup_beta(fn):
    _lookup(fn, torch.tensor([1.0, -1.0, 0.5]), _X, torch.arange(15.0).reshape(5, 3), 4.0, "5 keys, beta=4",
            "scale the scores by beta before the softmax")


def _lookup_widths(fn):
    values = torch.randn(5, 4, generator=torch.Generator().manual_seed(2))
    _lookup(fn, torch.tensor([0.3, 0.9]), _X[:, :2], values, 1.0, "keys (5, 2) and values (5, 4)",
            "the scores compare query with keys; the values are only blended: weights (n,) @ values (n, d_v)")


def _lookup_large_scores(fn):
    keys = torch.tensor([[30.0, 0.0], [0.0, 30.0], [20.0, 20.0]])
    values = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    _lookup(fn, torch.tensor([2.0, 1.0]), keys, values, 10.0, "scores 60, 30 and 60 with beta=10 (600 after scaling)",
            "exp(600) overflows to inf: use a stable softargmax (yours, or torch.softmax)")


def _lookup_beta_outside(fn):
    query = torch.tensor([0.001], dtype=torch.float16)
    keys = torch.tensor([[1000.0], [500.0]], dtype=torch.float16)
    values = torch.tensor([[1.0], [2.0]], dtype=torch.float16)
    case = "float16 query [0.001], keys [[1000], [500]], beta=100: scores 1 and 0.5, beta * scores 100 and 50"
    hint = ("multiply the scores by beta, not the keys or the query: beta * keys is 100,000 here, beyond "
            "float16's largest number (65504), while beta * scores is 100")
    got = call(fn, case, hint, query=query, keys=keys, values=values, beta=100.0)
    scores = keys.double() @ query.double()
    expect_close(got, (torch.softmax(100.0 * scores, -1) @ values.double()).to(torch.float16), case, hint)


def _lookup_half_beta_inside(fn):
    query = torch.tensor([1.0], dtype=torch.float16)
    keys = torch.tensor([[0.0], [0.0007]], dtype=torch.float16)
    values = torch.tensor([[0.0], [1.0]], dtype=torch.float16)
    case = "float16 query [1], keys [[0], [0.0007]], values [[0], [1]], beta=1000 (answer about 0.67)"
    hint = ("multiply by beta before exp, as in exp(beta * (scores - max)): exp(scores - max) ** beta raises "
            "float16's rounding of a number near 1 to the power beta")
    got = call(fn, case, hint, query=query, keys=keys, values=values, beta=1000.0)
    expected = torch.softmax(1000.0 * (keys.double() @ query.double()), -1) @ values.double()
    expect_close(got, expected.to(torch.float16), case, hint)


def _lookup_float64(fn):
    keys, values = _X.double(), torch.arange(10.0, dtype=torch.float64).reshape(5, 2)
    _lookup(fn, torch.tensor([0.5, 0.1, -0.3], dtype=torch.float64), keys, values, 1.0, "float64 inputs",
            "compute in the inputs' dtype all the way (no float32 step in between)")


def _attention(fn, X, beta, case, hint, atol=None):
    got = call(fn, case, hint, X=X, beta=beta)
    S = X @ X.transpose(-2, -1)
    A = torch.softmax(beta * S, -1)
    _expect_pair(got, (A @ X, A), case, hint, atol=atol)


def _expect_pair(got, expected, case, hint, atol=None):
    if not isinstance(got, tuple) or len(got) != 2:
        raise Mismatch(f"{case}: expected a pair (H, A), got {type(got).__name__}. Hint: return H, A: H "
                       "(..., t, d) first, then the weights A (..., t, t)")
    expect_close(got[0], expected[0], f"{case}: H", hint, atol=atol)
    expect_close(got[1], expected[1], f"{case}: A", hint + "; row i of A holds query i's weights and sums to 1",
                 atol=atol)


def _self_attention_small(fn):
    _attention(fn, torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), 1.0, "X = [[1, 0], [0, 1], [1, 1]], beta=1",
               "A = softargmax(beta * X X^T) row by row; H = A X")


def _self_attention_beta(fn):
    X = torch.tensor([[2.0, 0.0], [0.0, 2.0], [2.0, 2.0], [-2.0, 1.0]])
    _attention(fn, X, 0.1, "beta=0.1, where beta changes the answer a lot",
               "multiply the scores X X^T by beta before the softmax (beta = 0.1 makes A much flatter)")


def _self_attention_general(fn):
    _attention(fn, _X, 0.7, "X of shape (5, 3), beta=0.7",
               "row i of A holds query i's weights: normalise over the last dimension, then H = A @ X (t, d)")


def _self_attention_weights_sum_to_one(fn):
    X = torch.ones(4, 3)  # every query matches every key equally: H must equal X
    _attention(fn, X, 2.0, "X with 4 identical rows", "each row of A must sum to 1 (a weighted average)")


def _self_attention_rows_of_different_scale(fn):
    X = torch.tensor([[1.0, 0.0], [100.0, 0.0], [0.0, 1.0]])
    _attention(fn, X, 1.0, "X = [[1, 0], [100, 0], [0, 1]]: scores from 0 to 10000",
               "shift each row of the scores by that row's own maximum: the maximum of the whole matrix "
               "leaves exp(-10000) = 0 everywhere in some rows, and the diagonal x_i . x_i is not always "
               "the row's maximum (x_i . x_j is larger when x_j is longer)")


def _self_attention_large(fn):
    X = torch.tensor([[10.0, 0.0], [0.0, 10.0], [7.0, 7.0]])
    _attention(fn, X, 10.0, "X with scores up to 1000, beta=10",
               "exp(1000) overflows to inf: use a stable softargmax (yours, or torch.softmax)")


def _self_attention_beta_outside(fn):
    X = torch.tensor([[0.01], [0.02]], dtype=torch.float16)
    case = "float16 X = [[0.01], [0.02]], beta=1e7: scores 1e-4 to 4e-4, beta * scores 1,000 to 4,000"
    hint = ("multiply the scores X X^T by beta, not X: beta * X is 100,000 here, beyond float16's largest "
            "number (65504), while beta * scores stays below 4,100")
    got = call(fn, case, hint, X=X, beta=1e7)
    X64 = X.double()
    A = torch.softmax(1e7 * (X64 @ X64.T), -1)
    _expect_pair(got, ((A @ X64).to(torch.float16), A.to(torch.float16)), case, hint)


def _self_attention_batch(fn):
    X = _CUBE  # (2, 3, 4): two sets of three vectors
    _attention(fn, X, 0.5, "X of shape (2, 3, 4): two sets of 3 vectors, each attending only within its set",
               "X.T reverses every dimension of a 3-D tensor; swap the last two with X.transpose(-2, -1) "
               "(or X.mT), so that each set's scores are its own (t, t)")


def _self_attention_float64(fn):
    _attention(fn, _X.double(), 1.0, "float64 X of shape (5, 3)", "keep X's dtype and compute in it")


EXERCISES = (
    Exercise("ch01-softargmax", "soft argmax with inverse temperature", "softargmax",
             (_softargmax_small, _softargmax_beta, _softargmax_rows, _softargmax_3d, _softargmax_large,
              _softargmax_rows_of_different_scale, _softargmax_large_beta, _softargmax_half_precision,
              _softargmax_half_small_differences, _softargmax_huge_beta, _softargmax_gradients, _softargmax_masked,
              _softargmax_float64), softargmax,
             forbidden=("softmax", "log_softmax", "Softmax", "LogSoftmax", "softmin", "Softmin"),
             allows=Allows(lambda randn: {"scores": randn(5), "beta": 2.0}, batched=("scores",), half=True,
                    large={"scores": 50.0})),
    Exercise("ch01-hardargmax", "hard argmax (one-hot)", "hardargmax",
             (_hardargmax_small, _hardargmax_rows, _hardargmax_3d, _hardargmax_ties, _hardargmax_many_ties,
              _hardargmax_near_ties, _hardargmax_infinite, _hardargmax_float64),
             hardargmax,
             allows=Allows(lambda randn: {"scores": randn(5)}, batched=("scores",), half=True)),
    Exercise("ch01-soft-lookup", "a soft key-value lookup", "soft_lookup",
             (_lookup_small, _lookup_beta, _lookup_widths, _lookup_large_scores, _lookup_beta_outside,
              _lookup_half_beta_inside, _lookup_float64), soft_lookup,
             allows=Allows(lambda randn: {"query": randn(4), "keys": randn(6, 4), "values": randn(6, 3), "beta": 2.0},
                           half=True)),
    Exercise("ch01-self-attention", "parameter-free self-attention", "self_attention",
             (_self_attention_small, _self_attention_beta, _self_attention_general,
              _self_attention_weights_sum_to_one, _self_attention_rows_of_different_scale, _self_attention_large,
              _self_attention_beta_outside, _self_attention_float64, _self_attention_batch), self_attention,
             allows=Allows(lambda randn: {"X": randn(5, 4), "beta": 1.5}, batched=("X",), half=True,
                           large={"X": 8.0})),
)

__all__ = ["EXERCISES", "softargmax", "hardargmax", "soft_lookup", "self_attention", "Mismatch"]
