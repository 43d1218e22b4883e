"""Chapter 4 exercises: multi-head attention from per-head weight matrices, split the heads,
merge them back, and removing one head (ablation), in the order the chapter asks them.

Checks compare with values computed by hand or by plain PyTorch, never with the solutions.
Their shapes keep t != d_k, h > 1 and d_k != h, so that a reshape without the transpose, heads
taken in the wrong order or a slice of the wrong width cannot pass by a coincidence of shapes.
"""

from __future__ import annotations

import math

import torch

from ._core import Allows, Exercise, Mismatch, call, draws, expect_close, expect_gradients_reach

# --- reference solutions (shown in the book) ------------------------------------


def split_heads(x, num_heads):
    """x (batch, t, d_model) -> (batch, num_heads, t, d_k), d_k = d_model // num_heads."""
    batch, t, d_model = x.shape
    d_k = d_model // num_heads
    x = x.reshape(batch, t, num_heads, d_k)  # cut each token's features into heads
    return x.transpose(1, 2)                 # (batch, num_heads, t, d_k)


def merge_heads(x):
    """x (batch, num_heads, t, d_k) -> (batch, t, num_heads * d_k): the heads side by side."""
    batch, num_heads, t, d_k = x.shape
    x = x.transpose(1, 2)                    # (batch, t, num_heads, d_k)
    return x.reshape(batch, t, num_heads * d_k)


def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):
    """X_q (batch, t_q, d_model), X_kv (batch, t_k, d_model); per-head weights
    W_q, W_k (h, d_model, d_k), W_v (h, d_model, d_v); W_o (h * d_v, d_model)
    -> (batch, t_q, d_model)."""
    h, _, d_v = W_v.shape
    Q = torch.einsum("btd,hdk->bhtk", X_q, W_q)    # (batch, h, t_q, d_k)
    K = torch.einsum("btd,hdk->bhtk", X_kv, W_k)   # (batch, h, t_k, d_k)
    V = torch.einsum("btd,hdv->bhtv", X_kv, W_v)   # (batch, h, t_k, d_v)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(W_q.shape[-1])
    heads = torch.softmax(scores, dim=-1) @ V      # (batch, h, t_q, d_v)
    # Concat(head_1 .. head_h) W_o = the sum over i of head_i times W_o's
    # rows i d_v .. (i + 1) d_v - 1, the block that multiplies head i
    W_o = W_o.reshape(h, d_v, -1)                  # (h, d_v, d_model)
    return torch.einsum("bhtv,hvd->btd", heads, W_o)  # (batch, t_q, d_model)


def ablate_head(Z, num_heads, head):
    """Z (..., d_model): the heads side by side, before W_o -> a copy with
    head `head`'s d_k columns set to zero."""
    d_k = Z.shape[-1] // num_heads
    out = Z.clone()                                # a new tensor; Z is unchanged
    out[..., head * d_k:(head + 1) * d_k] = 0.0    # exactly 0, whatever the head held
    return out


# --- checks -----------------------------------------------------------------------

# split_heads ---------------------------------------------------------------------


def _split_expected(x, num_heads):
    batch, t, d_model = x.shape
    # head h, position i = the features h*d_k .. (h+1)*d_k - 1 of token i
    return torch.stack([x[:, :, h * (d_model // num_heads):(h + 1) * (d_model // num_heads)]
                        for h in range(num_heads)], dim=1)


def _split(fn, x, num_heads, case, hint):
    got = call(fn, case, hint, x=x, num_heads=num_heads)
    expect_close(got, _split_expected(x, num_heads), case, hint)
    return got


def _split_by_hand(fn):
    x = torch.arange(8.0).reshape(1, 2, 4)  # token 0 = [0, 1, 2, 3], token 1 = [4, 5, 6, 7]
    _split(fn, x, 2, "1 sequence of 2 tokens, d_model = 4, 2 heads: head 0 = [[0, 1], [4, 5]], "
           "head 1 = [[2, 3], [6, 7]]",
           "head h of token i holds the features h*d_k .. (h+1)*d_k - 1 of token i; cut the last axis into "
           "(num_heads, d_k), then move the heads axis before t with transpose(1, 2): reshaping straight to "
           "(batch, num_heads, t, d_k) mixes tokens")


def _split_shapes(fn):
    randn = draws(41)
    _split(fn, randn(2, 5, 12), 3, "batch 2, t = 5, d_model = 12, 3 heads of d_k = 4",
           "the result is (batch, num_heads, t, d_k) = (2, 3, 5, 4); cut d_model into (num_heads, d_k) in that "
           "order (head 0 = the first d_k features), not (d_k, num_heads), which interleaves the heads")


def _split_one_head(fn):
    randn = draws(42)
    _split(fn, randn(2, 3, 6), 1, "1 head: (2, 3, 6) -> (2, 1, 3, 6)",
           "with one head d_k = d_model and the result only gains an axis of size 1 at position 1")


def _split_many_heads(fn):
    randn = draws(43)
    _split(fn, randn(1, 7, 6), 6, "batch 1, t = 7, d_model = 6, 6 heads of d_k = 1",
           "take batch, t and d_model from x.shape (no fixed sizes); d_k = d_model // num_heads")


def _split_empty(fn):
    _split(fn, torch.zeros(2, 0, 4), 2, "an empty sequence (t = 0), d_model = 4, 2 heads: (2, 2, 0, 2)",
           "with t = 0 a reshape's -1 cannot be inferred (0 elements fit any size): give every size, "
           "d_k = d_model // num_heads included")


def _split_float64_gradients(fn):
    randn = draws(44)
    case = "a float64 x that requires gradients, (3, 4, 10), 2 heads"
    hint = "stay in PyTorch operations (reshape, view, transpose, permute): no .detach(), .numpy() or .tolist()"
    x = randn(3, 4, 10).double().requires_grad_(True)
    expect_gradients_reach([_split(fn, x, 2, case, hint)], {"x": x}, case, hint)


# merge_heads ---------------------------------------------------------------------


def _merge(fn, x, case, hint):
    got = call(fn, case, hint, x=x)
    expect_close(got, torch.cat(x.unbind(dim=1), dim=-1), case, hint)  # head 0's features first
    return got


def _merge_by_hand(fn):
    x = torch.tensor([[[[0.0, 1.0], [4.0, 5.0]], [[2.0, 3.0], [6.0, 7.0]]]])  # (1, 2 heads, 2 tokens, 2)
    _merge(fn, x, "2 heads, 2 tokens, d_k = 2: token 0 = [0, 1, 2, 3], token 1 = [4, 5, 6, 7]",
           "token i is [head 0 of token i, head 1 of token i, ...]: move the heads axis next to d_k with "
           "transpose(1, 2), then reshape to (batch, t, num_heads * d_k)")


def _merge_shapes(fn):
    randn = draws(45)
    _merge(fn, randn(2, 3, 5, 4), "batch 2, 3 heads, t = 5, d_k = 4 -> (2, 5, 12)",
           "transpose(1, 2) gives (batch, t, num_heads, d_k); then reshape (view fails on the transposed, "
           "non-contiguous tensor); head 0 comes first, and d_k stays the fastest axis")


def _merge_inverse(fn):
    randn = draws(46)
    x = randn(2, 6, 12)
    case = "merge_heads undoes chapter 4's split: split 6 x 12 features into 4 heads of 3 and merge them back"
    heads = _split_expected(x, 4)  # (2, 4, 6, 3)
    got = call(fn, case, "the result must be the original (batch, t, d_model) tensor", x=heads)
    expect_close(got, x, case, "merging must undo splitting: transpose(1, 2) then reshape, with no other reordering")


def _merge_one_token(fn):
    randn = draws(47)
    _merge(fn, randn(1, 3, 1, 2), "batch 1, 3 heads, one token (t = 1), d_k = 2",
           "take the sizes from x.shape; keep the batch axis even when it is 1 (no squeeze())")


def _merge_empty(fn):
    _merge(fn, torch.zeros(2, 2, 0, 3), "an empty sequence (t = 0), 2 heads of d_k = 3: (2, 0, 6)",
           "with t = 0 a reshape's -1 cannot be inferred (0 elements fit any size): give every size, "
           "num_heads * d_k included")


def _merge_float64_gradients(fn):
    randn = draws(48)
    case = "a float64 x that requires gradients, (2, 2, 3, 5)"
    hint = "stay in PyTorch operations: no .detach(), .numpy() or .tolist()"
    x = randn(2, 2, 3, 5).double().requires_grad_(True)
    expect_gradients_reach([_merge(fn, x, case, hint)], {"x": x}, case, hint)


# multi_head_attention -----------------------------------------------------------


def _mha_expected(X_q, X_kv, W_q, W_k, W_v, W_o):
    """One head at a time, then the heads side by side, then W_o: the loop of section 4.2."""
    heads = []
    for i in range(W_q.shape[0]):
        q, k, v = X_q @ W_q[i], X_kv @ W_k[i], X_kv @ W_v[i]
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(W_q.shape[-1]), dim=-1)
        heads.append(weights @ v)
    return torch.cat(heads, dim=-1) @ W_o


def _mha(fn, inputs, case, hint):
    got = call(fn, case, hint, **inputs)
    expect_close(got, _mha_expected(*inputs.values()), case, hint)
    return got


def _mha_inputs(randn, batch, t_q, t_k, d_model, h, d_k, d_v, dtype=torch.float32):
    return {name: value.to(dtype) for name, value in dict(
        X_q=randn(batch, t_q, d_model), X_kv=randn(batch, t_k, d_model),
        W_q=randn(h, d_model, d_k), W_k=randn(h, d_model, d_k), W_v=randn(h, d_model, d_v),
        W_o=randn(h * d_v, d_model)).items()}


def _mha_by_hand(fn):
    # d_model = 4 and 2 heads of d_k = d_v = 2: head 0 reads features 0-1, head 1 features 2-3
    X = torch.tensor([[[1.0, 0.0, 0.0, 2.0], [0.0, 1.0, 2.0, 0.0], [1.0, 1.0, 0.0, 0.0]]])
    eye, zero = torch.eye(2), torch.zeros(2, 2)
    W = torch.stack([torch.cat([eye, zero]), torch.cat([zero, eye])])  # (2, 4, 2)
    W_o = 2.0 * torch.eye(4)
    _mha(fn, dict(X_q=X, X_kv=X, W_q=W, W_k=W, W_v=W, W_o=W_o),
         "self-attention, 3 tokens, d_model = 4, 2 heads that read features 0-1 and 2-3, W_o = 2 I",
         "head i: softmax(X W_q[i] (X W_k[i])^T / sqrt(d_k)) X W_v[i]; put the heads side by side (head 0 "
         "first) and multiply by W_o")


def _mha_cross(fn):
    inputs = _mha_inputs(draws(49), batch=2, t_q=3, t_k=5, d_model=6, h=3, d_k=4, d_v=2)
    _mha(fn, inputs, "cross-attention: t_q = 3, t_k = 5, d_model = 6, 3 heads, d_k = 4, d_v = 2",
         "queries come from X_q, keys and values from X_kv; divide by sqrt(d_k) = sqrt(W_q.shape[-1]) (not "
         "d_model, not d_v); the result is (batch, t_q, d_model)")


def _mha_w_o(fn):
    randn = draws(50)
    inputs = _mha_inputs(randn, batch=2, t_q=4, t_k=4, d_model=8, h=2, d_k=4, d_v=4)
    case = "self-attention, d_model = 8, 2 heads of 4, a W_o that mixes the heads"
    hint = ("after the heads are side by side, (batch, t_q, h * d_v), multiply by W_o: without it the shape can "
            "still be right, the values are not")
    _mha(fn, inputs, case, hint)


def _mha_head_order(fn):
    randn = draws(51)
    inputs = _mha_inputs(randn, batch=1, t_q=2, t_k=3, d_model=6, h=3, d_k=2, d_v=2)
    inputs["W_o"] = torch.zeros(6, 6)
    inputs["W_o"][0:2, 0:2] = torch.eye(2)  # W_o keeps head 0 only: the result's features 0-1 are head 0
    _mha(fn, inputs, "3 heads, and a W_o that keeps only head 0's output (rows 0-1 of W_o)",
         "head 0 comes first in the concatenation (then head 1, ...); with heads reversed or interleaved, W_o "
         "reads the wrong head")


def _mha_batch_of_one(fn):
    inputs = _mha_inputs(draws(52), batch=1, t_q=1, t_k=4, d_model=4, h=2, d_k=3, d_v=2)
    _mha(fn, inputs, "batch 1, one query (t_q = 1), t_k = 4, 2 heads, d_k = 3, d_v = 2",
         "keep every axis even when its size is 1 (no squeeze()); the softmax runs over the t_k keys, the last axis")


def _mha_float64_gradients(fn):
    inputs = _mha_inputs(draws(53), batch=2, t_q=3, t_k=2, d_model=4, h=2, d_k=3, d_v=5, dtype=torch.float64)
    for value in inputs.values():
        value.requires_grad_(True)
    case = "float64 inputs that all require gradients (the weights are learned, the inputs come from earlier layers)"
    hint = "compute in the inputs' dtype with PyTorch operations: no .float(), .detach(), .numpy() or torch.no_grad()"
    expect_gradients_reach([_mha(fn, inputs, case, hint)], inputs, case, hint)


# ablate_head ---------------------------------------------------------------------


def _ablate(fn, Z, num_heads, head, case, hint):
    got = call(fn, case, hint, Z=Z, num_heads=num_heads, head=head)
    d_k = Z.shape[-1] // num_heads
    expected = Z.detach().clone()
    expected[..., head * d_k:(head + 1) * d_k] = 0.0
    expect_close(got, expected, case, hint)
    return got


def _ablate_by_hand(fn):
    Z = torch.arange(1.0, 13.0).reshape(1, 2, 6)  # 2 tokens, 3 heads of d_k = 2
    _ablate(fn, Z, 3, 1, "2 tokens, d_model = 6, 3 heads of d_k = 2, remove head 1: columns 2 and 3 become 0",
            "head h holds the columns h*d_k .. (h+1)*d_k - 1 of the last axis, in every token (a block, not "
            "every num_heads-th column, and not a token)")


def _ablate_width(fn):
    randn = draws(54)
    _ablate(fn, randn(2, 5, 12), 3, 2, "d_model = 12, 3 heads of d_k = 4, remove the last head (2)",
            "the block starts at head * d_k with d_k = d_model // num_heads (here 4), not at head * num_heads")


def _ablate_first(fn):
    randn = draws(55)
    _ablate(fn, randn(2, 3, 8), 4, 0, "d_model = 8, 4 heads of d_k = 2, remove head 0",
            "heads are numbered from 0: head 0 holds columns 0 .. d_k - 1")


def _ablate_2d(fn):
    randn = draws(56)
    _ablate(fn, randn(5, 6), 2, 1, "Z without a batch axis: (t, d_model) = (5, 6), 2 heads, remove head 1",
            "index the last axis with Z[..., a:b] (or build a mask over Z.shape[-1]), whatever the axes before it")


def _ablate_unchanged(fn):
    randn = draws(57)
    Z = randn(1, 4, 6)
    case = "Z must stay as it was (the layer's other heads read it)"
    got = _ablate(fn, Z, 2, 0, case, "return a new tensor (Z.clone(), then zero the block of the clone; or "
                                     "torch.where); do not zero Z itself")
    if got is Z:
        raise Mismatch(f"{case}: you returned Z itself. Hint: return a new tensor")


def _ablate_not_contiguous(fn):
    randn = draws(59)
    Z = randn(3, 2, 4).transpose(0, 1)  # (2, 3, 4), not contiguous in memory
    _ablate(fn, Z, 2, 0, "Z (2, 3, 4) made by a transpose (not contiguous), 2 heads, remove head 0",
            "reshape copies a tensor that is not contiguous, so writing into its result does not reach your "
            "copy: index the last axis of the copy itself (out[..., a:b] = 0) or use torch.where")


def _ablate_float64_gradients(fn):
    randn = draws(58)
    Z = randn(2, 3, 6).double().requires_grad_(True)
    case = "a float64 Z that requires gradients, 3 heads, remove head 1"
    hint = ("keep the input's dtype and stay in PyTorch operations (Z.clone() then zero the block of the clone, "
            "or torch.where): the other heads still learn through the ablated model")
    expect_gradients_reach([_ablate(fn, Z, 3, 1, case, hint)], {"Z": Z}, case, hint)



def _ablate_non_finite(fn):
    Z = torch.tensor([[1.0, 2.0, float("inf"), float("nan")]])
    _ablate(fn, Z, 2, 1, "head 1 holds inf and NaN (a float16 head that overflowed): its block becomes 0",
            "the removed head's block must be exactly 0 whatever it held: assign zeros (or torch.where), do not "
            "multiply by a 0/1 mask (inf * 0 and NaN * 0 are NaN)")
    Z = torch.tensor([[float("inf"), float("nan"), 1.0, 2.0]])
    _ablate(fn, Z, 2, 1, "head 0 holds inf and NaN and is kept; head 1 is removed: [inf, nan, 0, 0]",
            "every kept entry stays exactly as it was, inf and NaN included: do not clean the result "
            "(nan_to_num) or multiply the kept heads by 1 after a mask")


EXERCISES = (
    Exercise("ch04-multi-head", "multi-head attention from per-head weights", "multi_head_attention",
             (_mha_by_hand, _mha_cross, _mha_w_o, _mha_head_order, _mha_batch_of_one, _mha_float64_gradients),
             multi_head_attention,
             forbidden=("scaled_dot_product_attention", "MultiheadAttention", "multi_head_attention_forward"),
             allows=Allows(lambda randn: dict(X_q=randn(2, 3, 6), X_kv=randn(2, 4, 6), W_q=0.4 * randn(2, 6, 3),
                                              W_k=0.4 * randn(2, 6, 3), W_v=0.4 * randn(2, 6, 2),
                                              W_o=0.4 * randn(4, 6)),
                           half=True, large={"X_q": 40.0})),
    Exercise("ch04-split-heads", "(batch, t, d_model) -> (batch, h, t, d_k)", "split_heads",
             (_split_by_hand, _split_shapes, _split_one_head, _split_many_heads, _split_empty,
              _split_float64_gradients),
             split_heads),
    Exercise("ch04-merge-heads", "(batch, h, t, d_k) -> (batch, t, h d_k)", "merge_heads",
             (_merge_by_hand, _merge_shapes, _merge_inverse, _merge_one_token, _merge_empty, _merge_float64_gradients),
             merge_heads),
    Exercise("ch04-ablate-head", "remove one head before W_o", "ablate_head",
             (_ablate_by_hand, _ablate_width, _ablate_first, _ablate_2d, _ablate_unchanged, _ablate_not_contiguous,
              _ablate_float64_gradients, _ablate_non_finite),
             ablate_head,
             allows=Allows(lambda randn: {"Z": randn(3, 8), "num_heads": 4, "head": 2}, batched=("Z",), half=True)),
)

__all__ = ["EXERCISES", "split_heads", "merge_heads", "multi_head_attention", "ablate_head", "Mismatch"]
