"""Chapter 5 exercises: the sinusoidal table, the matrix that shifts it by k positions, and
rotary embeddings applied to queries or keys.

Checks compare with values computed by hand or by plain PyTorch (elementwise formulas,
complex numbers), never with the solutions. Their cases keep max_len != d_model and t != d_k,
and include shapes where swapped sines and cosines, an exponent of i/d instead of 2i/d,
positions that start at 1, or sines and cosines in two halves instead of interleaved, fail.
"""

from __future__ import annotations

import math

import torch

from ._core import Allows, Exercise, Mismatch, call, draws, expect_close, expect_gradients_reach

# --- reference solutions (shown in the book) ------------------------------------


def sinusoidal_table(max_len, d_model):
    """(max_len, d_model) float32: row p, columns 2i and 2i+1 hold
    sin(p / 10000^(2i/d_model)) and cos(p / 10000^(2i/d_model)); d_model even."""
    p = torch.arange(max_len, dtype=torch.float64)[:, None]      # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)      # (d_model / 2,)
    angle = p / 10000 ** (two_i / d_model)                        # (max_len, d_model / 2)
    E = torch.zeros(max_len, d_model, dtype=torch.float64)
    E[:, 0::2] = torch.sin(angle)                                 # even columns
    E[:, 1::2] = torch.cos(angle)                                 # odd columns
    return E.float()


def shift_matrix(k, d_model):
    """(d_model, d_model) float32 M with M @ E[p] == E[p + k] for every p."""
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        w = 10000 ** (-2 * i / d_model)
        c, s = math.cos(k * w), math.sin(k * w)
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = torch.tensor([[c, s], [-s, c]])
    return M.float()


def rope(x):
    """x (..., t, d_k), d_k even -> the same shape and dtype: pair (2i, 2i+1) of
    row p turned by the angle p * 10000^(-2i/d_k)."""
    t, d_k = x.shape[-2], x.shape[-1]
    p = torch.arange(t, dtype=torch.float64)[:, None]              # (t, 1)
    theta = 10000 ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
    cos = torch.cos(p * theta).to(x.dtype)                         # (t, d_k / 2)
    sin = torch.sin(p * theta).to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]                              # the pairs
    out = torch.empty_like(x)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out


# --- checks -----------------------------------------------------------------------

# sinusoidal_table ----------------------------------------------------------------


def _table_expected(max_len, d_model):
    """One column at a time, with math.sin and math.cos."""
    E = torch.zeros(max_len, d_model, dtype=torch.float64)
    for p in range(max_len):
        for i in range(d_model // 2):
            angle = p / 10000 ** (2 * i / d_model)
            E[p, 2 * i], E[p, 2 * i + 1] = math.sin(angle), math.cos(angle)
    return E.float()


def _table_rows(positions, d_model):
    """Rows ``positions`` (int64 (n,)) of the table in float64: one math.pow per frequency, the angles
    in float64 (the long checks, where the loop above would take seconds)."""
    freqs = torch.tensor([math.pow(10000.0, -2 * i / d_model) for i in range(d_model // 2)], dtype=torch.float64)
    angle = positions.to(torch.float64)[:, None] * freqs  # (n, d_model / 2)
    return torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).reshape(len(positions), d_model)


def _float32(got, case, what):
    if isinstance(got, torch.Tensor) and got.dtype != torch.float32:
        raise Mismatch(f"{case}: expected dtype torch.float32 ({what}), got {got.dtype}. Hint: compute in "
                       "float64 if you like, and return .float()")


def _table(fn, max_len, d_model, case, hint):
    got = call(fn, case, hint, max_len=max_len, d_model=d_model)
    _float32(got, case, "what embeddings use")
    expected = (_table_expected(max_len, d_model) if max_len <= 5000
                else _table_rows(torch.arange(max_len), d_model).float())
    expect_close(got, expected, case, hint)


def _table_by_hand(fn):
    _table(fn, 3, 4, "max_len = 3, d_model = 4: row 0 = [0, 1, 0, 1], row 1 = [sin 1, cos 1, sin 0.01, cos 0.01]",
           "positions start at 0 (row 0 is sin 0 = 0, cos 0 = 1); the sine goes in the even columns 2i, the "
           "cosine in the odd columns 2i + 1, side by side (interleaved, not two halves); pair i uses "
           "10000^(2i / d_model), here 1 and 100")


def _table_frequencies(fn):
    _table(fn, 50, 16, "max_len = 50, d_model = 16: eight frequencies",
           "the exponent is 2i / d_model with i the pair's number (0, 1, ..., d_model/2 - 1), which is the even "
           "column's index divided by d_model: not i / d_model, and the base is 10000")


def _table_wide(fn):
    _table(fn, 3, 64, "a short, wide table: max_len = 3 < d_model = 64",
           "take the positions from max_len (rows) and the frequencies from d_model (columns): the two sizes "
           "differ")


def _table_long(fn):
    _table(fn, 3000, 8, "a long table, max_len = 3000, d_model = 8: angles up to 2999 radians",
           "compute the angles p / 10000^(2i / d_model) in float64 and convert the table to float32 at the end: "
           "float32 keeps about 7 digits, so the angles of a long table are off by about 1e-5")


def _table_very_long(fn):
    _table(fn, 30000, 64, "a very long table, max_len = 30,000, d_model = 64: angles up to 29,999 radians",
           "compute the frequencies 10000^(-2i / d_model) in float64 too, not only the positions: a float32 "
           "frequency is off by up to 6e-8 of itself, and 30,000 times that is more than the checks allow")


def _table_one_position(fn):
    _table(fn, 1, 6, "a single position (max_len = 1), d_model = 6",
           "keep the shape (max_len, d_model) even when max_len is 1")


# shift_matrix --------------------------------------------------------------------


def _shift_expected(k, d_model):
    """Where each entry comes from: sin(a + b) and cos(a + b), written out per pair."""
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        b = k / 10000 ** (2 * i / d_model)
        # sin(a + b) = cos(b) sin(a) + sin(b) cos(a);  cos(a + b) = -sin(b) sin(a) + cos(b) cos(a)
        M[2 * i, 2 * i], M[2 * i, 2 * i + 1] = math.cos(b), math.sin(b)
        M[2 * i + 1, 2 * i], M[2 * i + 1, 2 * i + 1] = -math.sin(b), math.cos(b)
    return M.float()


def _shift(fn, k, d_model, case, hint):
    got = call(fn, case, hint, k=k, d_model=d_model)
    _float32(got, case, "the table's dtype")
    expect_close(got, _shift_expected(k, d_model), case, hint)
    # and what the matrix is for: it moves real rows of the table (computed here by formula)
    p = torch.arange(max(0, -k), max(0, -k) + 40)
    moved = _table_rows(p, d_model) @ got.detach().double().T
    if not torch.allclose(moved, _table_rows(p + k, d_model), atol=1e-4):
        raise Mismatch(f"{case}: M @ E[p] is not E[p + k]. Hint: {hint}")


def _shift_by_hand(fn):
    _shift(fn, 1, 2, "k = 1, d_model = 2: one block [[cos 1, sin 1], [-sin 1, cos 1]]",
           "the pair is (sin a, cos a): sin(a + b) = cos b sin a + sin b cos a, so the first row is "
           "[cos b, sin b]; cos(a + b) = -sin b sin a + cos b cos a gives the second, [-sin b, cos b]")


def _shift_blocks(fn):
    _shift(fn, 3, 8, "k = 3, d_model = 8: four 2 x 2 blocks on the diagonal, zeros elsewhere",
           "block i sits at rows and columns 2i, 2i + 1 and turns by k w_i with w_i = 10000^(-2i / d_model); "
           "every other entry is 0 (a pair is never mixed with another pair)")


def _shift_back(fn):
    _shift(fn, -5, 6, "a negative shift, k = -5 (back by five positions), d_model = 6",
           "the same formula holds for negative k; the transpose of M_k is M_-k, so a transposed block shifts "
           "the wrong way")


def _shift_zero(fn):
    _shift(fn, 0, 4, "k = 0: the identity",
           "with k = 0 every block is [[1, 0], [0, 1]]")


def _shift_wide(fn):
    _shift(fn, 20, 32, "k = 20, d_model = 32: sixteen frequencies",
           "use the pair's own frequency 10000^(-2i / d_model) in block i, and the shift k (not 1) in its angle")


def _shift_far(fn):
    hint = ("compute the angle k w_i in float64 (math.cos(k * w) with Python floats is float64): k w_i in "
            "float32 is off by up to 6e-8 of itself, about 6e-3 at k = 100,000; and build M_k from its "
            "angles, not as the power M_1^k, whose rounding errors add up over k products")
    _shift(fn, 100000, 32, "a far shift, k = 100,000, d_model = 32", hint)
    _shift(fn, -100000, 32, "a far shift back, k = -100,000, d_model = 32", hint)


# rope ----------------------------------------------------------------------------


def _rope_expected(x):
    """The complex-number form: pair (x[2i], x[2i+1]) is z = x[2i] + j x[2i+1], times exp(j p theta_i)."""
    t, d_k = x.shape[-2], x.shape[-1]
    xd = x.detach().to(torch.float64)
    z = torch.view_as_complex(xd.reshape(*x.shape[:-1], d_k // 2, 2).contiguous())  # (..., t, d_k / 2)
    theta = torch.tensor([10000 ** (-2 * i / d_k) for i in range(d_k // 2)], dtype=torch.float64)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * theta  # (t, d_k / 2)
    turned = z * torch.polar(torch.ones_like(angle), angle)
    return torch.view_as_real(turned).reshape(x.shape).to(x.dtype)


def _rope(fn, x, case, hint):
    got = call(fn, case, hint, x=x)  # call() also fails an answer that changes x in place
    expect_close(got, _rope_expected(x), case, hint)
    return got


def _rope_by_hand(fn):
    x = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 2.0]])  # (t = 3, d_k = 2), theta_0 = 1
    _rope(fn, x, "t = 3, d_k = 2 (one pair, theta = 1): rows [1, 0], [1, 0], [0, 2] become [1, 0], "
          "[cos 1, sin 1], [-2 sin 2, 2 cos 2]",
          "row p turns by p * theta (positions start at 0, so row 0 stays); a turn by angle a maps (a1, a2) to "
          "(a1 cos a - a2 sin a, a1 sin a + a2 cos a): counter-clockwise")


def _rope_batched(fn):
    randn = draws(61)
    _rope(fn, randn(2, 3, 5, 8), "queries (batch 2, heads 3, t = 5, d_k = 8)",
          "t is x.shape[-2] and d_k is x.shape[-1], whatever comes before them; pair i is the features 2i and "
          "2i + 1 side by side (not i and i + d_k/2, the 'rotate half' layout), with theta_i = "
          "10000^(-2i / d_k)")


def _rope_long(fn):
    randn = draws(62)
    _rope(fn, randn(1, 40, 4), "t = 40 > d_k = 4: later positions turn by large angles",
          "the angle of row p and pair i is p * 10000^(-2i / d_k), with the exponent 2i / d_k (not i / d_k)")


def _rope_no_batch(fn):
    randn = draws(63)
    _rope(fn, randn(6, 8), "x without batch or head axes: (t, d_k) = (6, 8)",
          "index the pairs with x[..., 0::2] and x[..., 1::2] and build the angles from x.shape[-2:], so that "
          "any number of leading axes works (none included)")


def _rope_float64_gradients(fn):
    randn = draws(64)
    x = randn(2, 7, 6).double().requires_grad_(True)
    case = "a float64 x that requires gradients (queries are learned projections)"
    hint = ("compute the angles p * theta_i in float64 (float32 angles are off by about 1e-7, too much for a "
            "float64 x), take cos and sin as x.dtype, and stay in PyTorch operations: no .float(), .detach(), "
            ".numpy() or torch.no_grad()")
    expect_gradients_reach([_rope(fn, x, case, hint)], {"x": x}, case, hint)


def _rope_far_positions(fn):
    randn = draws(65)
    hint = ("compute the angles p * theta_i in float64 whatever x's dtype, then convert the cosines and sines to "
            "x's dtype: bfloat16 holds whole numbers exactly only up to 256, so positions and angles formed in "
            "x's dtype turn far rows by the wrong angle")
    for x in (randn(300, 4).bfloat16(), randn(20000, 4)):
        _rope(fn, x, f"{x.dtype} x of shape {tuple(x.shape)}: positions up to {x.size(0) - 1}", hint)


EXERCISES = (
    Exercise("ch05-sinusoidal", "the sinusoidal table", "sinusoidal_table",
             (_table_by_hand, _table_frequencies, _table_wide, _table_long, _table_very_long, _table_one_position),
             sinusoidal_table, forbidden=("sinusoidal_encoding", "SinusoidalPositionalEncoding")),
    Exercise("ch05-shift", "the matrix that moves an encoding k positions", "shift_matrix",
             (_shift_by_hand, _shift_blocks, _shift_back, _shift_zero, _shift_wide, _shift_far),
             shift_matrix, forbidden=("sinusoidal_shift",)),
    Exercise("ch05-rope", "rotary embeddings of queries or keys", "rope",
             (_rope_by_hand, _rope_batched, _rope_long, _rope_no_batch, _rope_float64_gradients,
              _rope_far_positions),
             rope, forbidden=("apply_rotary", "rotary_angles"),
             allows=Allows(lambda randn: {"x": randn(5, 6)}, batched=("x",), half=True)),
)

__all__ = ["EXERCISES", "sinusoidal_table", "shift_matrix", "rope", "Mismatch"]
