"""Chapter 10 exercises: merging two partial attention results, causal tiled attention that
skips the future, giving each query head its key-value head, a sliding-window mask for a
decoder, and RMSNorm's backward pass.

Checks compare with values computed by hand or by plain PyTorch (softmax over the whole row,
the masked formula written out, autograd through RMSNorm's formula, indexing head by head),
never with the solutions. Their cases include sets of keys that are empty (L = -inf), scores large
enough to overflow exp, queries after cached keys, tiles that do not divide t, the tiles a
causal block must skip (counted in floating-point operations), one key-value head and as many
as query heads, vectors whose mean is not 0, and windows of 1 and longer than the text.
"""

from __future__ import annotations

import math

import torch
from ..measure import LargestTensor
from torch.utils.flop_counter import FlopCounterMode

from ._core import (Allows, Exercise, Mismatch, call, draws, expect_close, expect_equal, expect_gradients_reach)

# --- reference solutions (shown in the book) ------------------------------------


def merge_partials(O1, L1, O2, L2):
    """Attention over two disjoint sets of keys -> attention over both: O1, O2 (..., t_q, d_v)
    each set's output, L1, L2 (..., t_q) the log-sum-exp of each set's scores (-inf, with O
    all zeros, for an empty set) -> (O (..., t_q, d_v), L (..., t_q)) of the union."""
    m = torch.maximum(L1, L2)                                          # (..., t_q)
    safe = torch.where(torch.isneginf(m), torch.zeros_like(m), m)      # both empty: no shift
    w1, w2 = torch.exp(L1 - safe), torch.exp(L2 - safe)                # (..., t_q), each <= 1
    seen = (w1 + w2) > 0                                               # False only if both are empty
    total = torch.where(seen, w1 + w2, 1)                              # never log(0) or x / 0: no NaN gradient
    L = torch.where(seen, safe + torch.log(total), -math.inf)          # -inf when both are empty
    O = (w1[..., None] * O1 + w2[..., None] * O2) / total[..., None]   # 0 when both are empty
    return O, L


def causal_tiled_attention(Q, K, V, block_size):
    """Q (..., t_q, d_k), K (..., t_k, d_k), V (..., t_k, d_v) -> (..., t_q, d_v):
    causal attention, query i at position p = t_k - t_q + i seeing keys j <= p, one tile of
    block_size queries x block_size keys at a time; a query block reads no key block that
    starts after its last query's position."""
    t_q, t_k, b = Q.shape[-2], K.shape[-2], block_size
    outputs = []
    for i in range(0, t_q, b):
        q = Q[..., i:i + b, :]                                            # (..., r, d_k)
        p = torch.arange(i, i + q.shape[-2], device=Q.device) + t_k - t_q  # (r,) positions
        m = torch.full(q.shape[:-1], -math.inf, dtype=Q.dtype, device=Q.device)     # (..., r)
        l = torch.zeros(q.shape[:-1], dtype=Q.dtype, device=Q.device)              # (..., r)
        a = torch.zeros(*q.shape[:-1], V.shape[-1], dtype=Q.dtype, device=Q.device)  # (..., r, d_v)
        for j in range(0, int(p[-1]) + 1, b):                             # key blocks up to p[-1]
            S = q @ K[..., j:j + b, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])  # (..., r, c)
            keys = torch.arange(j, j + S.shape[-1], device=Q.device)      # (c,)
            S = S.masked_fill(keys > p[:, None], -math.inf)               # the future: no weight
            m_new = torch.maximum(m, S.amax(dim=-1))                      # finite: key 0 comes first
            rescale = torch.exp(m - m_new)
            P = torch.exp(S - m_new[..., None])
            l = l * rescale + P.sum(dim=-1)
            a = a * rescale[..., None] + P @ V[..., j:j + b, :]
            m = m_new
        outputs.append(a / l[..., None])
    return torch.cat(outputs, dim=-2)


def expand_kv(x, num_heads):
    """x (batch, num_kv_heads, t, d) -> (batch, num_heads, t, d): query head i gets
    key-value head i // (num_heads // num_kv_heads)."""
    group = num_heads // x.shape[1]
    return x.repeat_interleave(group, dim=1)


def rms_norm_backward(x, g, eps, dy):
    """x (..., d), g (d,), eps a float, dy (..., d) the gradient of the loss with respect to
    y = g * x / r, r = sqrt(mean(x^2) + eps) -> (dx (..., d), dg (d,))."""
    r = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)            # (..., 1)
    u = g * dy                                                            # (..., d): dL/d(x / r)
    dx = (u - x * (u * x).mean(dim=-1, keepdim=True) / r.pow(2)) / r       # (..., d)
    dg = (dy * x / r).reshape(-1, x.shape[-1]).sum(dim=0)                 # (d,): summed over vectors
    return dx, dg


def window_mask(t_q, t_k, window):
    """bool (t_q, t_k): query i, at position p = t_k - t_q + i, may attend to key j
    when p - window < j <= p."""
    p = torch.arange(t_q)[:, None] + (t_k - t_q)                      # (t_q, 1)
    j = torch.arange(t_k)[None, :]                                     # (1, t_k)
    return (j <= p) & (j > p - window)


# --- checks: merge_partials -------------------------------------------------------------

_MERGE_HINT = ("with m = max(L1, L2): L = m + log(exp(L1 - m) + exp(L2 - m)), and O is the average of O1 and O2 "
               "weighted by exp(L1 - L) and exp(L2 - L) (the share of each set in the union's softmax)")


def _partial(S, V):
    """Attention over one set of keys from its scores S (..., t_q, n) and values V (..., n, d_v), in
    float64, written out: (O, L), with (zeros, -inf) for a set without keys."""
    if S.shape[-1] == 0:
        return torch.zeros(*S.shape[:-1], V.shape[-1], dtype=S.dtype), torch.full(S.shape[:-1], -math.inf,
                                                                                 dtype=S.dtype)
    return torch.softmax(S, dim=-1) @ V, torch.logsumexp(S, dim=-1)


def _merge(fn, S, V, split, case, hint=_MERGE_HINT, dtype=torch.float32, grad=False):
    """Split the keys of scores S (..., t_q, t_k) and values V at ``split``; the learner merges the
    two partial results; compare with attention over all the keys."""
    S, V = S.double(), V.double()
    (O1, L1), (O2, L2) = _partial(S[..., :split], V[..., :split, :]), _partial(S[..., split:], V[..., split:, :])
    inputs = [x.to(dtype).requires_grad_(grad) for x in (O1, L1, O2, L2)]
    got = call(fn, case, hint, O1=inputs[0], L1=inputs[1], O2=inputs[2], L2=inputs[3])
    if not isinstance(got, tuple) or len(got) != 2:
        raise Mismatch(f"{case}: expected a tuple (O, L), got {type(got).__name__}. Hint: return O, L")
    O, L = _partial(S, V)
    expect_close(got[1], L.to(dtype), case + ": L", hint)
    expect_close(got[0], O.to(dtype), case + ": O", hint)
    return got, inputs


def _merge_by_hand(fn):
    S = torch.tensor([[0.0, 0.0, math.log(2)]])
    V = torch.tensor([[1.0], [3.0], [6.0]])
    _merge(fn, S, V, 2, "one query; keys 1-2 with scores (0, 0) and values (1, 3): O1 = 2, L1 = log 2; key 3 "
           "with score log 2 and value 6: O2 = 6, L2 = log 2. Together O = (2 + 2 + 6 + 6) / 4 = 4, L = log 4")


def _merge_unequal(fn):
    randn = draws(101)
    _merge(fn, randn(5, 9) * 2, randn(9, 3), 7, "5 queries, 7 keys in the first set and 2 in the second: the "
           "first set carries most of the weight")


def _merge_batched(fn):
    randn = draws(102)
    _merge(fn, randn(2, 3, 4, 6) * 2, randn(2, 3, 6, 5), 3, "two batch dimensions (2, 3), 4 queries, 3 + 3 keys",
           _MERGE_HINT + "; L has one entry per query, so index O's last dimension apart: w[..., None] * O")


def _merge_empty(fn):
    randn = draws(103)
    S, V = randn(3, 4), randn(4, 2)
    _merge(fn, S, V, 0, "the first set has no keys (L1 = -inf, O1 = 0): the result is the second set's",
           "exp(-inf - m) is 0, so an empty set adds nothing; never compute -inf - (-inf)")
    _merge(fn, S, V, 4, "the second set has no keys (L2 = -inf, O2 = 0)", "exp(-inf - m) is 0")
    _merge(fn, S[:, :0], V[:0], 0, "both sets without keys: O = 0 and L = -inf (the query has seen nothing yet)",
           "when both L are -inf, exp(L1 - m) is exp(-inf - (-inf)) = exp(nan): shift by 0 in that case, and do "
           "not divide by a sum of 0")


def _merge_empty_for_some(fn):
    # four queries: both sets empty, only the first, only the second, neither (-inf per query)
    inf = math.inf
    L1, L2 = torch.tensor([-inf, -inf, 0.5, 0.0]), torch.tensor([-inf, 1.0, -inf, 1.0])
    O1 = torch.tensor([[0.0, 0.0], [0.0, 0.0], [3.0, -1.0], [1.0, 1.0]])
    O2 = torch.tensor([[0.0, 0.0], [2.0, 5.0], [0.0, 0.0], [2.0, 2.0]])
    case = ("4 queries, L1 = [-inf, -inf, 0.5, 0], L2 = [-inf, 1, -inf, 1]: a set can be empty for some queries "
            "and not others")
    hint = ("emptiness is per query: an element of L that is -inf marks that query's set as empty, so handle it "
            "element by element (torch.where), not with a test on the whole tensor")
    got = call(fn, case, hint, O1=O1, L1=L1, O2=O2, L2=L2)
    if not isinstance(got, tuple) or len(got) != 2:
        raise Mismatch(f"{case}: expected a tuple (O, L), got {type(got).__name__}. Hint: return O, L")
    share = math.e / (1 + math.e)  # query 3: exp(1) / (exp(0) + exp(1))
    expect_close(got[1], torch.tensor([-inf, 1.0, 0.5, math.log(1 + math.e)]), case + ": L", hint)
    expect_close(got[0], torch.tensor([[0.0, 0.0], [2.0, 5.0], [3.0, -1.0], [1 + share, 1 + share]]),
                 case + ": O", hint)


def _merge_large(fn):
    S = torch.tensor([[1000.0, 998.0, -1000.0, 999.0]])
    V = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
    _merge(fn, S, V, 2, "scores near 1000: L1 and L2 near 1000, and exp(1000) overflows float32",
           "never exponentiate an L alone: only differences (L1 - m, L2 - m) are exponentiated, and they are <= 0")


def _merge_very_negative(fn):
    S = torch.tensor([[-20000.0, -20001.0]]).double()
    V = torch.tensor([[1.0, 0.0], [0.0, 1.0]]).double()
    _merge(fn, S, V, 1, "float64 scores near -20,000: L1 and L2 are finite and very negative, not empty sets",
           "only -inf marks an empty set: a finite L, however negative, is a real set of keys (do not clamp the "
           "maximum or compare with a finite floor)", dtype=torch.float64)
    S = torch.tensor([[-20000.0, 1.0]]).double()[:, :1]  # one key, score -20,000, in the second set
    _merge(fn, S, torch.tensor([[1.0, 2.0]]).double(), 0,
           "float64: the first set empty (L1 = -inf), the second one key of score -20,000: O = [1, 2], L = -20,000",
           "an empty set's -inf must stay -inf: a sentinel such as -1e4 in its place outweighs a real set whose "
           "L is below it", dtype=torch.float64)


def _merge_many(fn):
    randn = draws(104)
    S, V = randn(2, 3, 10) * 3, randn(2, 10, 4)
    parts = [_partial(S[..., a:b], V[..., a:b, :]) for a, b in ((0, 2), (2, 5), (5, 9), (9, 10))]
    hint = _MERGE_HINT + "; your result must be a valid input again: L the log-sum-exp, O normalised"
    in_order = parts[0]
    for part in parts[1:]:
        in_order = call(fn, "four sets merged one after another", hint, O1=in_order[0], L1=in_order[1],
                        O2=part[0], L2=part[1])
    pairs = [call(fn, "four sets merged in pairs", hint, O1=parts[k][0], L1=parts[k][1], O2=parts[k + 1][0],
                  L2=parts[k + 1][1]) for k in (0, 2)]
    tree = call(fn, "four sets merged in pairs", hint, O1=pairs[0][0], L1=pairs[0][1], O2=pairs[1][0],
                L2=pairs[1][1])
    O, L = _partial(S, V)
    for name, got in (("one after another", in_order), ("in pairs, then the pairs", tree)):
        case = f"four sets of 2, 3, 4 and 1 keys merged {name} (as split-key decoding does)"
        if not isinstance(got, tuple) or len(got) != 2:
            raise Mismatch(f"{case}: expected a tuple (O, L), got {type(got).__name__}. Hint: return O, L")
        expect_close(got[1], L, case + ": L", hint)
        expect_close(got[0], O, case + ": O", hint)


def _merge_gradients(fn):
    randn = draws(105)
    case = "float64 inputs that require gradients (in training, the loss reaches both partial results)"
    got, inputs = _merge(fn, randn(3, 5), randn(5, 2), 2, case, dtype=torch.float64, grad=True)
    hint = "no .detach(), torch.no_grad() or in-place writes: O depends on L1 and L2 through the weights too"
    expect_gradients_reach(list(got), dict(O1=inputs[0], L1=inputs[1], O2=inputs[2], L2=inputs[3]), case, hint)
    dO, dL = randn(3, 2).double(), randn(3).double()  # a loss's gradients with respect to O and L
    again = call(fn, case, _MERGE_HINT, O1=inputs[0], L1=inputs[1], O2=inputs[2], L2=inputs[3])
    grads = torch.autograd.grad(again, inputs, (dO, dL), allow_unused=True)
    leaves = [x.detach().requires_grad_() for x in inputs]
    w = torch.softmax(torch.stack([leaves[1], leaves[3]], dim=-1), dim=-1)  # each set's share, (3, 2)
    O = w[..., :1] * leaves[0] + w[..., 1:] * leaves[2]
    L = torch.logsumexp(torch.stack([leaves[1], leaves[3]], dim=-1), dim=-1)
    expected = torch.autograd.grad((O, L), leaves, (dO, dL))
    for name, g, e in zip(("O1", "L1", "O2", "L2"), grads, expected):
        if g is None:
            raise Mismatch(f"{case}: no gradient reaches {name}. Hint: {hint}")
        expect_close(g, e, f"{case}: the gradient with respect to {name}", hint)


def _merge_empty_gradients(fn):
    # four queries: both sets empty, only the first, only the second, neither (-inf per query)
    inf = math.inf
    L1 = torch.tensor([-inf, -inf, 0.5, 0.0], dtype=torch.float64, requires_grad=True)
    L2 = torch.tensor([-inf, 1.0, -inf, 1.0], dtype=torch.float64, requires_grad=True)
    O1 = torch.tensor([[0.0, 0.0], [0.0, 0.0], [3.0, -1.0], [1.0, 1.0]], dtype=torch.float64,
                      requires_grad=True)
    O2 = torch.tensor([[0.0, 0.0], [2.0, 5.0], [0.0, 0.0], [2.0, 2.0]], dtype=torch.float64,
                      requires_grad=True)
    case = ("float64 gradients where sets are empty (4 queries, L1 = [-inf, -inf, 0.5, 0], L2 = [-inf, 1, -inf, "
            "1]): finite everywhere, and 0 for the query whose two sets are both empty")
    hint = ("torch.where picks a value but not a gradient: the branch it discards is still differentiated, and "
            "0 * NaN is NaN. Never compute exp(-inf - (-inf)), log(0) or x / 0 at all, even in a branch you "
            "discard: shift by 0 where both L are -inf, and replace a sum of 0 by 1 before log and division")
    got = call(fn, case, hint, O1=O1, L1=L1, O2=O2, L2=L2)
    if not isinstance(got, tuple) or len(got) != 2:
        raise Mismatch(f"{case}: expected a tuple (O, L), got {type(got).__name__}. Hint: return O, L")
    for name, x in (("O", got[0]), ("L", got[1])):
        if not isinstance(x, torch.Tensor) or x.grad_fn is None:
            raise Mismatch(f"{case}: {name} carries no gradient. Hint: no .detach() or torch.no_grad()")
    dO = torch.tensor([[1.0, -2.0], [0.5, 1.0], [-1.0, 2.0], [1.5, 0.5]], dtype=torch.float64)
    dL = torch.tensor([1.0, -0.5, 2.0, 0.75], dtype=torch.float64)
    grads = torch.autograd.grad(got, (O1, L1, O2, L2), (dO, dL), allow_unused=True)
    # by hand: w = each set's share of the union (0 for an empty set, and for both when both are empty),
    # O = w1 O1 + w2 O2 and L = log(e^L1 + e^L2), so dO1 = w1 dO, dL1 = w1 (dL + dO . (O1 - O)), and so on
    w1 = torch.tensor([0.0, 0.0, 1.0, 1 / (1 + math.e)], dtype=torch.float64)
    w2 = torch.tensor([0.0, 1.0, 0.0, math.e / (1 + math.e)], dtype=torch.float64)
    O = w1[:, None] * O1.detach() + w2[:, None] * O2.detach()
    expected = (w1[:, None] * dO, w1 * (dL + (dO * (O1.detach() - O)).sum(-1)),
                w2[:, None] * dO, w2 * (dL + (dO * (O2.detach() - O)).sum(-1)))
    for name, g, e in zip(("O1", "L1", "O2", "L2"), grads, expected):
        if g is None:
            raise Mismatch(f"{case}: no gradient reaches {name}. Hint: {hint}")
        expect_close(g, e, f"{case}: the gradient with respect to {name}", hint)


def _merge_empty_half(fn):
    randn = draws(106)
    S, V = randn(2, 3), randn(3, 2)
    _merge(fn, S[:, :0], V[:0], 0, "both sets without keys, in float16: O = 0 and L = -inf",
           "-inf and the largest float32 do not exist in float16 (its largest number is 65504): test for -inf "
           "itself (torch.isneginf) rather than against a float32 constant", dtype=torch.float16)


# --- checks: causal_tiled_attention -----------------------------------------------------

_TILED_HINT = ("for each block of queries keep, per query, the running maximum m, the running sum l and the "
               "unnormalised output a; for each block of keys from key 0 up to the block's last position, "
               "set the scores of keys after a query's position to -inf, rescale l and a by exp(m - m_new), "
               "add exp(S - m_new) (summed, and times V's block), and divide a by l after the last block")


def _causal_expected(Q, K, V):
    """The formula written out, in float64: query i (position t_k - t_q + i) sees keys j <= its position."""
    t_q, t_k = Q.shape[-2], K.shape[-2]
    S = Q.double() @ K.double().transpose(-2, -1) / math.sqrt(Q.shape[-1])
    future = torch.arange(t_k)[None, :] > torch.arange(t_q)[:, None] + (t_k - t_q)  # (t_q, t_k)
    return (torch.softmax(S.masked_fill(future, -math.inf), dim=-1) @ V.double()).to(Q.dtype)


def _tile_flops(Q, K, V, block_size):
    """Multiply-adds x 2 of Q K^T and P V over the tiles a query block must read (key blocks from
    key 0, of block_size keys, up to the one holding the block's last position)."""
    t_q, t_k, b = Q.shape[-2], K.shape[-2], block_size
    lead = math.prod(Q.shape[:-2])
    total = 0
    for i in range(0, t_q, b):
        rows = min(b, t_q - i)
        last = t_k - t_q + i + rows - 1  # the block's last position
        keys = min(t_k, (last // b + 1) * b)
        total += 2 * lead * rows * keys * (Q.shape[-1] + V.shape[-1])
    return total


def _tiled(fn, Q, K, V, block_size, case, hint=_TILED_HINT, budget=True):
    with LargestTensor() as seen, FlopCounterMode(display=False) as flops:
        got = call(fn, case, hint, Q=Q, K=K, V=V, block_size=block_size)
    expect_close(got, _causal_expected(Q, K, V), case, hint)
    if not budget:
        return got
    lead, b = math.prod(Q.shape[:-2]), block_size
    allowed = lead * max(Q.shape[-2] * max(Q.shape[-1], V.shape[-1]), K.shape[-2] * max(K.shape[-1], V.shape[-1]),
                         b * b)
    if seen.largest > allowed:
        raise Mismatch(f"{case}: a tensor of {seen.largest:,} elements was made; tiles of {b} queries x {b} keys "
                       f"need at most {allowed:,} (one tile of scores, or the inputs' size). Hint: split the "
                       "queries into blocks too, and compute one block_size x block_size tile of scores at a time")
    needed = _tile_flops(Q, K, V, b)
    if flops.get_total_flops() > needed:
        raise Mismatch(f"{case}: your matrix products did {flops.get_total_flops():,} floating-point operations; "
                       f"the tiles that hold a visible key need {needed:,}. Hint: a block of queries whose last "
                       "position is p reads the key blocks that start at or before p, and no later one: they "
                       "hold only future keys, whose weights are 0")
    return got


def _tiled_by_hand(fn):
    randn = draws(110)
    _tiled(fn, randn(4, 2), randn(4, 2), randn(4, 2), 2,
           "t_q = t_k = 4 in tiles of 2: query 0 sees key 0, query 3 sees keys 0-3; the tile of queries "
           "0-1 x keys 2-3 is all future",
           "query i may attend to keys 0..i here (t_q = t_k): mask the scores of later keys with -inf")


def _tiled_cached(fn):
    randn = draws(111)
    _tiled(fn, randn(3, 4), randn(10, 4), randn(10, 4), 4,
           "3 new queries, 10 keys (7 of them cached): query 0 is at position 7 and sees keys 0-7",
           "the queries are the LAST t_q positions: query i is at p = t_k - t_q + i and sees keys j <= p")


def _tiled_ragged(fn):
    randn = draws(112)
    _tiled(fn, randn(7, 4), randn(11, 4), randn(11, 3), 3,
           "t_q = 7, t_k = 11 in tiles of 3 (the last query and key blocks are shorter), d_v = 3 != d_k = 4",
           _TILED_HINT + "; slice Q[..., i:i + b, :] and K[..., j:j + b, :] (the last slices are shorter)")


def _tiled_one_tile(fn):
    randn = draws(113)
    _tiled(fn, randn(5, 4), randn(5, 4), randn(5, 4), 8, "block_size = 8 > t = 5: one tile",
           "with one tile this is causal attention: the scores of future keys masked with -inf, then softmax")


def _tiled_single(fn):
    randn = draws(114)
    _tiled(fn, randn(4, 2), randn(6, 2), randn(6, 2), 1, "block_size = 1: one query and one key at a time")


def _tiled_one_query(fn):
    randn = draws(115)
    _tiled(fn, randn(1, 4), randn(9, 4), randn(9, 4), 4, "t_q = 1 (decoding one token): it sees all 9 keys")


def _tiled_skips(fn):
    randn = draws(116)
    _tiled(fn, randn(16, 4), randn(16, 4), randn(16, 4), 4,
           "t = 16 in tiles of 4: 10 of the 16 tiles hold a visible key; the other 6 must not be computed")


def _tiled_narrow_heads(fn):
    randn = draws(117)
    _tiled(fn, randn(16, 2), randn(16, 2), randn(16, 2), 4,
           "d_k = 2, t = 16 in tiles of 4: a strip of one query block against every visible key (4 x 16 "
           "scores) is larger than the inputs here",
           "compute one block_size x block_size tile of scores at a time, not a block of queries against all "
           "its keys at once")


def _tiled_rising(fn):
    Q = torch.full((3, 2), 10.0)
    K = torch.arange(8.0)[:, None].expand(8, 2) * 2  # scores rise with the key: 0, 28, ..., 198
    V = draws(118)(8, 2)
    _tiled(fn, Q, K, V, 2, "float32 scores that rise from block to block (0 to 198): the first block's "
           "maximum is far below the last's",
           "the running maximum must follow every new block: m_new = max(m, this block's maximum); exp of a "
           "score more than about 88 above the maximum used overflows float32")


def _tiled_very_negative(fn):
    randn = draws(119)
    Q, K = torch.full((4, 1), -200.0).double(), torch.full((4, 1), 100.0).double()
    _tiled(fn, Q, K, randn(4, 2).double(), 2, "float64 scores all -20,000: query 0 must see key 0 only",
           "mask the future with -inf, not with a finite number: -1e4 is above these scores, so the future "
           "would get the weight")
    Q, K = torch.tensor([[1e5], [1.0]]), torch.tensor([[-1e5], [1.0]])
    _tiled(fn, Q, K, torch.tensor([[1.0], [0.0]]), 2, "float32, query 0's only visible score -1e10: its output "
           "is key 0's value, 1", "mask the future with -inf: any finite fill (-1e4, -1e9) can be above a "
           "visible score")


def _tiled_float64_gradients(fn):
    randn = draws(117)
    Q, K, V = (randn(5, 3).double().requires_grad_() for _ in range(3))
    case = "float64 inputs that require gradients"
    got = _tiled(fn, Q, K, V, 2, case, "keep the inputs' dtype: build m, l and a with dtype=Q.dtype")
    hint = "no .detach(), torch.no_grad() or in-place writes into a tensor built beforehand"
    expect_gradients_reach([got], dict(Q=Q, K=K, V=V), case, hint)
    G = randn(5, 3).double()  # the gradient of a loss with respect to the output
    again = call(fn, case, _TILED_HINT, Q=Q, K=K, V=V, block_size=2)  # a fresh graph to differentiate
    grads = torch.autograd.grad(again, (Q, K, V), G)
    Q_, K_, V_ = (x.detach().requires_grad_() for x in (Q, K, V))
    expected = torch.autograd.grad(_causal_expected(Q_, K_, V_), (Q_, K_, V_), G)
    for name, g, e in zip("QKV", grads, expected):
        expect_close(g, e, f"{case}: the gradient with respect to {name}",
                     hint + "; the weights' gradient flows to Q and K through the scores, so nothing on the "
                     "way from the scores to the output may be detached")


# --- checks: expand_kv ------------------------------------------------------------------

_EXPAND_HINT = ("repeat each key-value head num_heads // num_kv_heads times IN PLACE, next to itself (heads "
                "0, 0, 1, 1, not 0, 1, 0, 1), along the head axis (dim 1)")


def _expand(fn, x, num_heads, case, hint=_EXPAND_HINT):
    got = call(fn, case, hint, x=x, num_heads=num_heads)
    group = num_heads // x.shape[1]
    expected = torch.stack([x[:, i // group] for i in range(num_heads)], dim=1)  # head by head
    expect_equal(got, expected, case, hint)


def _expand_by_hand(fn):
    x = torch.arange(2.0).view(1, 2, 1, 1)  # key-value heads 0 and 1
    _expand(fn, x, 4, "2 key-value heads (values 0 and 1) for 4 query heads: expected heads 0, 0, 1, 1")


def _expand_random(fn):
    randn = draws(121)
    _expand(fn, randn(2, 2, 5, 3), 6, "batch 2, 2 key-value heads for 6 query heads, t = 5, d = 3")


def _expand_mqa(fn):
    randn = draws(122)
    _expand(fn, randn(3, 1, 4, 2), 4, "one key-value head for 4 query heads (multi-query attention)")


def _expand_same(fn):
    randn = draws(123)
    _expand(fn, randn(1, 3, 2, 4), 3, "as many key-value heads as query heads: nothing to repeat, batch 1",
            "with num_heads == num_kv_heads every head is its own: group = 1")


def _expand_three_for_twelve(fn):
    x = torch.arange(3.0).view(1, 3, 1, 1).expand(1, 3, 2, 2).contiguous()  # heads of 0s, 1s and 2s
    _expand(fn, x, 12, "3 key-value heads (values 0, 1, 2) for 12 query heads: expected 0, 0, 0, 0, 1, 1, 1, 1, "
            "2, 2, 2, 2", "each key-value head serves group = num_heads // num_kv_heads query heads in a row: "
            "head i reads key-value head i // group")


def _expand_float64(fn):
    randn = draws(124)
    _expand(fn, randn(2, 2, 3, 3).double(), 4, "float64 keys: the result stays float64",
            "no .float(): repeat the tensor as it is")


# --- checks: rms_norm_backward --------------------------------------------------------

_RMS_HINT = ("r = sqrt(mean(x^2) + eps) depends on every x_j of the vector, so dx has two terms: the path "
             "through x / r with r held fixed, and the path through r itself (differentiate r with respect to "
             "x_j: it brings a factor x_j / (d r)); dg is dy * x / r summed over every vector (all leading "
             "dimensions)")
_AUTOGRAD = ("backward", "autograd", "grad", "vjp", "jacobian", "jvp", "functional_call", "RMSNorm", "rms_norm")


def _rms_expected(x, g, eps, dy):
    """autograd through the formula written out, in float64."""
    x64 = x.detach().double().requires_grad_()
    g64 = g.detach().double().requires_grad_()
    y = g64 * x64 / torch.sqrt((x64 * x64).sum(dim=-1, keepdim=True) / x.shape[-1] + eps)
    dx, dg = torch.autograd.grad(y, (x64, g64), dy.double())
    return dx.to(x.dtype), dg.to(x.dtype)


def _rms(fn, x, g, eps, dy, case, hint=_RMS_HINT):
    got = call(fn, case, hint, x=x, g=g, eps=eps, dy=dy)
    if not isinstance(got, tuple) or len(got) != 2:
        raise Mismatch(f"{case}: expected a tuple (dx, dg), got {type(got).__name__}. Hint: return dx, dg")
    dx, dg = _rms_expected(x, g, eps, dy)
    expect_close(got[1], dg, case + ": dg", hint)
    expect_close(got[0], dx, case + ": dx", hint)
    return got


def _rms_by_hand(fn):
    _rms(fn, torch.tensor([3.0, -4.0]), torch.ones(2), 0.0, torch.tensor([1.0, 0.0]),
         "x = (3, -4), g = 1, eps = 0, dy = (1, 0): r = sqrt(12.5), dx = (0.1810, 0.1358), dg = (0.8485, 0)")


def _rms_not_centred(fn):
    _rms(fn, torch.tensor([[1.0, 2.0, 3.0, 6.0]]), torch.ones(4), 1e-6, torch.tensor([[0.5, -1.0, 0.0, 2.0]]),
         "x = (1, 2, 3, 6), mean 3: RMSNorm keeps the mean, and so does its gradient",
         "RMSNorm subtracts nothing: r is the root of the mean of squares, not of the variance")


def _rms_gain_and_eps(fn):
    randn = draws(131)
    _rms(fn, randn(5, 6), randn(6), 0.5, randn(5, 6), "5 vectors, d = 6, a random gain g and eps = 0.5",
         "eps goes inside the square root; g multiplies dy feature by feature before anything else")


def _rms_batched(fn):
    randn = draws(132)
    _rms(fn, randn(2, 3, 6), randn(6), 1e-5, randn(2, 3, 6),
         "two batch dimensions (2, 3): dx is (2, 3, 6), dg is (6,), summed over all 6 vectors",
         "dg sums over EVERY leading dimension (reshape(-1, d).sum(0)); mean(dim=-1) and x.shape[-1] "
         "work for any number of them")


def _rms_tiny(fn):
    _rms(fn, torch.full((2, 4), 1e-3), torch.ones(4), 1e-4, torch.ones(2, 4), "tiny vectors (1e-3): eps matters",
         "r = sqrt(mean(x^2) + eps): the derivative of r uses the same r, eps inside")


def _rms_tiny_half(fn):
    _rms(fn, torch.tensor([[0.003, -0.004]], dtype=torch.float16), torch.ones(2, dtype=torch.float16), 1e-6,
         torch.tensor([[1.0, 0.0]], dtype=torch.float16),
         "float16, x = (0.003, -0.004), eps = 1e-6: r^3 = 5e-8 is below float16's smallest normal number (6e-5)",
         "never form r^3 (or 1 / r^3) in half precision: divide by r in steps, (u - x * mean(u x) / r / r) / r, "
         "or compute in float32 and convert back")


def _rms_one_feature(fn):
    _rms(fn, torch.tensor([[2.0], [-0.5]]), torch.tensor([3.0]), 0.25, torch.tensor([[1.0], [1.0]]),
         "d = 1: y = g x / sqrt(x^2 + eps), dx = g eps / (x^2 + eps)^(3/2)",
         "with d = 1 the mean is the value itself; the formula for dx holds unchanged")


def _rms_float64(fn):
    randn = draws(133)
    _rms(fn, randn(3, 5).double(), randn(5).double(), 1e-6, randn(3, 5).double(),
         "float64: both results stay float64", "build nothing in float32: keep x's dtype")


# --- checks: window_mask ----------------------------------------------------------------

_WINDOW_HINT = ("query i sits at position p = t_k - t_q + i (the queries are the LAST t_q positions); it sees "
                "keys j with p - window < j <= p: itself and the window - 1 before it")


def _window_expected(t_q, t_k, window):
    mask = torch.zeros(t_q, t_k, dtype=torch.bool)
    for i in range(t_q):
        p = t_k - t_q + i
        for j in range(t_k):
            mask[i, j] = p - window < j <= p
    return mask


def _window(fn, t_q, t_k, window, case, hint=_WINDOW_HINT):
    got = call(fn, case, hint, t_q=t_q, t_k=t_k, window=window)
    expect_equal(got, _window_expected(t_q, t_k, window), case, hint)


def _window_square(fn):
    _window(fn, 5, 5, 2, "t_q = t_k = 5, window 2: each position and the one before it")


def _window_cached(fn):
    _window(fn, 2, 6, 3, "2 new queries after 4 cached keys (t_q = 2, t_k = 6), window 3",
            _WINDOW_HINT + "; with a cache, query 0 is at position 4, not 0")


def _window_one_query(fn):
    _window(fn, 1, 9, 4, "one query (decoding a token) over 9 keys, window 4: keys 5 to 8")


def _window_one(fn):
    _window(fn, 4, 4, 1, "window 1: each position sees only itself")


def _window_long(fn):
    _window(fn, 3, 5, 10, "a window longer than the text: the causal mask",
            "a window past the start sees every earlier key: nothing before position 0")


EXERCISES = (
    Exercise("ch10-merge", "merging two partial attention results", "merge_partials",
             (_merge_by_hand, _merge_unequal, _merge_batched, _merge_empty, _merge_empty_for_some,
              _merge_empty_gradients, _merge_empty_half, _merge_large, _merge_very_negative, _merge_many,
              _merge_gradients),
             merge_partials, forbidden=("logsumexp", "logaddexp", "softmax", "log_softmax", "online_softmax"),
             allows=Allows(lambda randn: dict(O1=randn(4, 3), L1=randn(4), O2=randn(4, 3), L2=randn(4)),
                           batched=("O1", "L1", "O2", "L2"), half=True, large={"L1": 100.0, "L2": 100.0})),
    Exercise("ch10-tiled", "causal tiled attention that skips the future", "causal_tiled_attention",
             (_tiled_by_hand, _tiled_cached, _tiled_ragged, _tiled_one_tile, _tiled_single, _tiled_one_query,
              _tiled_skips, _tiled_narrow_heads, _tiled_rising, _tiled_very_negative, _tiled_float64_gradients),
             causal_tiled_attention, forbidden=("tiled_attention", "TiledAttention", "scaled_dot_product_attention",
                                                "softmax", "log_softmax", "MultiheadAttention", "flex_attention"),
             allows=Allows(lambda randn: dict(Q=randn(4, 3), K=randn(6, 3), V=randn(6, 2), block_size=4),
                           batched=("Q", "K", "V"), half=True, large={"Q": 40.0})),
    Exercise("ch10-expand-kv", "a key-value head for each query head", "expand_kv",
             (_expand_by_hand, _expand_random, _expand_mqa, _expand_same, _expand_three_for_twelve, _expand_float64),
             expand_kv, forbidden=("repeat_kv",),
             allows=Allows(lambda randn: dict(x=randn(2, 2, 3, 4), num_heads=4), half=True)),
    Exercise("ch10-window", "a sliding-window mask with a cache", "window_mask",
             (_window_square, _window_cached, _window_one_query, _window_one, _window_long),
             window_mask, forbidden=("sliding_window_mask", "causal_mask")),
    Exercise("ch10-rmsnorm", "RMSNorm's backward pass", "rms_norm_backward",
             (_rms_by_hand, _rms_not_centred, _rms_gain_and_eps, _rms_batched, _rms_tiny, _rms_tiny_half,
              _rms_one_feature, _rms_float64),
             rms_norm_backward, forbidden=_AUTOGRAD,
             allows=Allows(lambda randn: dict(x=randn(5, 6), g=randn(6), eps=1e-5, dy=randn(5, 6)), half=True)),
)

__all__ = ["EXERCISES", "merge_partials", "causal_tiled_attention", "expand_kv", "rms_norm_backward", "window_mask",
           "Mismatch"]
