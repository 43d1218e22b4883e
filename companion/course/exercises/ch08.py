"""Chapter 8 exercises: bits per character, sampling with a temperature, one step of the
key-value cache.

Checks compare with values computed by hand or by plain loops (a probability per position, a
softmax written out, attention over the whole sequence row by row), never with the solutions.
Their traps: uniform logits, whose cost is exactly 1 bit in base 2 but 0.693 in base e;
targets that differ from the current token, so predicting the current character fails;
temperatures above and below 1, so multiplying by T fails; ties at the k-th logit; at T = 0, logits
closer than a softmax's rounding, so a greedy choice made from the probabilities fails; confident
logits whose naive exp/log overflows; d_k != d_v != d_model, so a wrong scale or a missing
transpose fails; an empty cache.
"""

from __future__ import annotations

import math

import torch

from ._core import (Allows, Exercise, Mismatch, call, draws, expect_close,
                    expect_gradients_reach)

# --- reference solutions (shown in the book) ------------------------------------


def bits_per_char(logits, ids):
    """logits (batch, t, vocab) from the model run on ids (batch, t) -> a 0-d tensor:
    the mean of -log2 p(next character) over the t - 1 predicted positions."""
    log_p = torch.log_softmax(logits[:, :-1], dim=-1)       # position i predicts i + 1
    targets = ids[:, 1:]                                     # (batch, t - 1)
    log_p_target = log_p.gather(-1, targets[..., None])[..., 0]  # (batch, t - 1)
    return -log_p_target.mean() / math.log(2)                # nats -> bits


def temperature_probs(logits, temperature, top_k=None):
    """logits (batch, vocab) -> probabilities (batch, vocab): softmax(logits / T)
    over the top_k highest logits of each row (ties with the k-th kept);
    T = 0 -> all the probability on the first highest logit."""
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]     # (batch, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if temperature == 0:
        first_max = logits.argmax(dim=-1, keepdim=True)      # (batch, 1)
        return torch.zeros_like(logits).scatter(-1, first_max, 1.0)
    # shift by each row's maximum first: logits / T itself may overflow at a small T
    shifted = logits - logits.max(dim=-1, keepdim=True).values  # (batch, vocab), <= 0
    return torch.softmax(shifted / temperature, dim=-1)


def attend_with_cache(x_new, K_cache, V_cache, W_q, W_k, W_v):
    """One decoding step of one head. x_new (batch, 1, d_model); K_cache
    (batch, t, d_k), V_cache (batch, t, d_v), t >= 0; W_q, W_k (d_k, d_model),
    W_v (d_v, d_model) as nn.Linear stores them.
    -> out (batch, 1, d_v), K (batch, t + 1, d_k), V (batch, t + 1, d_v)."""
    q, k, v = x_new @ W_q.T, x_new @ W_k.T, x_new @ W_v.T   # (batch, 1, d)
    K = torch.cat([K_cache, k], dim=1)                       # the new key last
    V = torch.cat([V_cache, v], dim=1)                       # and its value
    scores = q @ K.transpose(1, 2) / math.sqrt(K.shape[-1])  # (batch, 1, t + 1)
    out = torch.softmax(scores, dim=-1) @ V                  # (batch, 1, d_v)
    return out, K, V


# --- checks: bits_per_char ------------------------------------------------------------


def _bits_expected(logits, ids):
    """Position by position: -log2 of the softmax probability of the character that follows."""
    logits = logits.detach().double()
    batch, t, _ = logits.shape
    bits = []
    for b in range(batch):
        for i in range(t - 1):
            row = logits[b, i]
            log_z = row.max() + torch.log(torch.exp(row - row.max()).sum())
            bits.append(-(row[ids[b, i + 1]] - log_z) / math.log(2))
    return torch.stack(bits).mean()


_IDS = torch.tensor([[0, 3, 1, 4], [2, 2, 0, 1]])  # for the checks Allows draws (vocab 5)


def _bits(fn, logits, ids, case, hint):
    got = call(fn, case, hint, logits=logits, ids=ids)
    expected = _bits_expected(logits, ids).to(logits.dtype)
    if isinstance(got, torch.Tensor) and got.dim() != 0 and got.numel() == 1:
        raise Mismatch(f"{case}: expected a 0-d tensor (one number for the whole batch), got shape "
                       f"{tuple(got.shape)}. Hint: {hint}")
    expect_close(got, expected, case, hint)
    return got


def _bits_uniform(fn):
    _bits(fn, torch.zeros(1, 4, 2), torch.tensor([[0, 1, 1, 0]]),
          "uniform logits over 2 characters: every prediction costs exactly 1 bit",
          "bits are logarithms in base 2: -log2(1/2) = 1. torch.log is the natural log (0.693 here); divide "
          "nats by math.log(2), or use torch.log2. Also check: the MEAN over the batch * (t - 1) predictions, "
          "the softmax over the vocabulary (the last axis), and a tensor returned, not a float")


def _bits_by_hand(fn):
    p = torch.tensor([0.5, 0.25, 0.125, 0.125])
    logits = p.log().expand(1, 4, 4).clone()
    ids = torch.tensor([[3, 0, 1, 2]])  # predicted: 0 (1 bit), 1 (2 bits), 2 (3 bits): mean 2 bits
    _bits(fn, logits, ids, "p = [1/2, 1/4, 1/8, 1/8] at every position, ids [3, 0, 1, 2]: (1 + 2 + 3) / 3 = 2 bits",
          "position i predicts the NEXT character ids[:, i + 1]: compare logits[:, :-1] with ids[:, 1:] "
          "(the last position predicts a character that is not there, and ids[:, 0] is never predicted)")


def _bits_random(fn):
    randn = draws(81)
    logits = randn(3, 6, 5)
    ids = torch.tensor([[0, 1, 2, 3, 4, 0], [4, 4, 1, 0, 2, 3], [2, 0, 4, 1, 3, 1]])
    _bits(fn, logits, ids, "batch 3, t = 6, vocab 5, random logits",
          "the mean runs over batch * (t - 1) predictions; the softmax runs over the vocabulary (the last axis); "
          "logits[:, i] predicts ids[:, i + 1], so pair logits[:, :-1] with ids[:, 1:]")


def _bits_confident(fn):
    logits = torch.zeros(2, 3, 4)
    logits[..., 0] = 200.0  # very sure of character 0
    ids = torch.tensor([[0, 0, 2], [1, 0, 0]])
    _bits(fn, logits, ids, "confident logits (200 on one character) and a surprising next character",
          "exp(200) overflows float32 and log(softmax) of a tiny probability is log(0) = -inf: use "
          "torch.log_softmax (or F.cross_entropy), which subtracts the maximum first")


def _bits_rows_apart(fn):
    logits = torch.zeros(2, 2, 2)
    logits[1, 0, 0] = 1000.0  # one row far above the other: each row needs its own maximum
    _bits(fn, logits, torch.zeros(2, 2, dtype=torch.long),
          "two rows whose logits are 1000 apart: 1 bit and 0 bits, a mean of 0.5",
          "subtract each row's own maximum (log_softmax over the last axis does): one maximum for the whole "
          "tensor leaves the other rows' exponentials at exp(-1000) = 0, in float64 too")


def _bits_very_confident(fn):
    logits = torch.zeros(1, 2, 2)
    logits[0, 0, 0] = 1000.0  # p(character 1) = exp(-1000): 0 even in float64
    _bits(fn, logits, torch.tensor([[0, 1]]), "logits 1000 apart and the unlikely character next: 1442.7 bits "
          "(1000 / ln 2) at the first position",
          "a probability of exp(-1000) is 0 in float32 and in float64, and log2(0) = -inf: take logarithms of "
          "the softmax in one step, with torch.log_softmax (or F.cross_entropy), divided by ln 2")


def _bits_long_half(fn):
    logits = torch.tensor([200.0, 0.0]).expand(1, 501, 2).to(torch.float16)
    _bits(fn, logits, torch.ones(1, 501, dtype=torch.long), "float16, 500 predictions each 200 nats off: 288.5 "
          "bits; their sum (100,000 nats) is above float16's largest number, 65,504",
          "a sum of many large float16 losses overflows to inf, and F.cross_entropy's own reduction does too in "
          "float16: compute the loss in float32 (logits.float()), or take .mean() of the per-position losses "
          "(PyTorch accumulates a mean in float32), then return the result in the logits' dtype")


def _bits_float64_gradients(fn):
    randn = draws(82)
    logits = randn(1, 2, 3).double().requires_grad_()
    got = _bits(fn, logits, torch.tensor([[2, 1]]), "batch of 1, t = 2 (one prediction), float64 logits",
                "keep the logits' dtype and stay in PyTorch operations (no .item(), .float() or .numpy()): the "
                "loss is trained through")
    expect_gradients_reach([got], {"logits": logits}, "float64 logits that require gradients",
                           "do not .detach() or use torch.no_grad()")


# --- checks: temperature_probs -----------------------------------------------------------


def _softmax_by_hand(row, T):
    """exp((l - max) / T) / sum over the kept entries; -inf entries get 0."""
    row = row.double()
    finite = torch.isfinite(row)
    m = row[finite].max()
    e = torch.where(finite, torch.exp((row - m) / T), torch.zeros_like(row))
    return e / e.sum()


def _probs_expected(logits, T, top_k):
    rows = []
    for row in logits.detach().double():
        if top_k is not None:
            kth = sorted(row.tolist(), reverse=True)[min(top_k, len(row)) - 1]
            row = torch.where(row >= kth, row, torch.full_like(row, float("-inf")))
        if T == 0:
            one_hot = torch.zeros_like(row)
            one_hot[[i for i, v in enumerate(row.tolist()) if v == row.max().item()][0]] = 1.0
            rows.append(one_hot)
        else:
            rows.append(_softmax_by_hand(row, T))
    return torch.stack(rows).to(logits.dtype)


def _probs(fn, logits, T, top_k, case, hint):
    got = call(fn, case, hint, logits=logits, temperature=T, top_k=top_k)
    expect_close(got, _probs_expected(logits, T, top_k), case, hint)


def _probs_temperatures(fn):
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    hint = ("the temperature divides the logits: softmax(logits / T). T = 2 flattens the distribution, T = 0.5 "
            "sharpens it (multiplying by T does the opposite); the softmax runs over each row's vocabulary "
            "(dim=-1)")
    _probs(fn, logits, 1.0, None, "T = 1: the model's own softmax", hint)
    _probs(fn, logits, 2.0, None, "T = 2: flatter than T = 1", hint)
    _probs(fn, logits, 0.5, None, "T = 0.5: sharper than T = 1", hint)


def _probs_greedy(fn):
    _probs(fn, torch.tensor([[1.0, 3.0, 3.0, 0.0], [0.5, -1.0, 0.2, 0.4]]), 0, None,
           "T = 0, a tie for the highest logit in row 0",
           "T = 0 is greedy decoding: probability 1 on the highest logit and 0 elsewhere (dividing by 0 gives "
           "NaN or inf); on a tie, the first one (what argmax returns)")


def _probs_greedy_close(fn):
    hint = ("at T = 0 take the argmax of the logits themselves: a softmax first rounds logits that are closer "
            "than its rounding step (about 6e-8 near a probability of 1 in float32) to one probability, and "
            "argmax then takes the first of a tie that the logits do not have")
    _probs(fn, torch.tensor([[1e-8, 3e-8, 2e-8, -1.0], [-1.0, 2e-8, 1e-8, 3e-8]]), 0, None,
           "T = 0, float32 logits [[1e-8, 3e-8, 2e-8, -1], [-1, 2e-8, 1e-8, 3e-8]]: distinct logits that a "
           "softmax rounds to one probability", hint)
    _probs(fn, torch.tensor([[2e-8, -1.0, 3e-8, 1e-8]]), 0, 2,
           "T = 0, top_k = 2, float32 logits [2e-8, -1, 3e-8, 1e-8]: the highest is the third", hint)
    _probs(fn, torch.tensor([[1e-17, 3e-17, 2e-17, -1.0]], dtype=torch.float64), 0, None,
           "T = 0, float64 logits [1e-17, 3e-17, 2e-17, -1]: the highest is the second", hint)
    tiny = 2.0 ** -24  # float16's smallest number above 0
    _probs(fn, torch.tensor([[0.0, tiny, 2 * tiny, -1.0]], dtype=torch.float16), 0, None,
           "T = 0, float16 logits [0, 2**-24, 2**-23, -1]: the highest is the third", hint)


def _probs_top_k_on_logits(fn):
    hint = ("choose the k highest among the LOGITS, not among probabilities: the probabilities of logits closer "
            "than their rounding step are one value (and at a huge T every probability is the same), so a "
            "threshold on them keeps more than k")
    _probs(fn, torch.tensor([[1e-17, 3e-17, 2e-17, -1.0]], dtype=torch.float64), 1.0, 2,
           "top_k = 2, T = 1, float64 logits [1e-17, 3e-17, 2e-17, -1]: the second and third are kept", hint)
    _probs(fn, torch.tensor([[0.0, 1.0, 2.0]]), 1e20, 1, "top_k = 1 at T = 1e20, logits [0, 1, 2]: [0, 0, 1]", hint)


def _probs_top_k(fn):
    logits = torch.tensor([[0.1, 2.0, 1.5, -0.3, 1.0, 0.7], [3.0, -2.0, 0.0, 1.0, 2.5, 0.5]])
    _probs(fn, logits, 1.0, 2, "top_k = 2 in two rows whose best characters are in different places",
           "keep the k highest logits of EACH row (topk along the last axis), set the others to -inf, then "
           "softmax: the kept probabilities are renormalised to sum to 1")
    _probs(fn, logits, 0.8, 3, "top_k = 3 with T = 0.8", "apply top-k to the logits, then divide by T")


def _probs_tie_at_k(fn):
    _probs(fn, torch.tensor([[2.0, 1.0, 1.0, 0.5, 1.0]]), 1.0, 2,
           "top_k = 2, and three logits tie for 2nd place: all of them are kept",
           "keep every logit >= the k-th highest (logits < kth become -inf), so tied logits are treated alike")
    _probs(fn, torch.tensor([[5.0, 5.0, 3.0, 0.0]]), 1.0, 2,
           "top_k = 2, logits [5, 5, 3, 0]: the two 5s are the 1st and 2nd highest, so 3 is dropped",
           "the k-th highest counts repeated values, as torch.topk does: in [5, 5, 3, 0] the 2nd highest is 5, "
           "not 3 (the 2nd highest distinct value)")


def _probs_no_top_k(fn):
    logits = draws(83)(2, 7)
    _probs(fn, logits, 1.3, None, "top_k = None keeps every character", "None means no filtering")
    _probs(fn, logits, 1.3, 7, "top_k = vocab keeps every character", "k as large as the vocabulary filters nothing")

def _probs_half_precision(fn):
    logits = torch.tensor([[0.5, 2.0, 1.0], [3.0, -1.0, 2.5]])
    hint = ("return the logits' dtype in every branch: F.one_hot(...).float() and torch.zeros(...) are float32; "
            "build with torch.zeros_like(logits) or .to(logits.dtype)")
    for dtype in (torch.float16, torch.bfloat16):
        for T, top_k in ((0, None), (0, 2), (1.0, 2)):
            _probs(fn, logits.to(dtype), T, top_k, f"{dtype} logits, T = {T}, top_k = {top_k}", hint)


def _probs_small_temperature_half(fn):
    hint = ("logits / T overflows in half precision at a small T (70 / 0.001 = 70,000 is beyond float16's "
            "largest number, 65504): subtract each row's maximum from the logits before dividing by T")
    logits = torch.tensor([[70.0, 70.0, 0.0], [-3.0, 65.0, 64.9375]], dtype=torch.float16)
    _probs(fn, logits, 0.001, None, "float16 logits [[70, 70, 0], [-3, 65, 64.94]], T = 0.001", hint)
    _probs(fn, logits, 0.001, 2, "float16 logits [[70, 70, 0], [-3, 65, 64.94]], T = 0.001, top_k = 2", hint)


def _probs_dropped_stay_dropped(fn):
    hint = ("give the logits below the k-th -inf (float('-inf')), not a large negative number: -1e4 can be larger "
            "than the kept logits, and -1e4 / T is no longer small at a large T")
    _probs(fn, torch.tensor([[-20000.0, -30000.0, -25000.0]]), 1.0, 1, "top_k = 1 with logits far below -10,000", hint)
    _probs(fn, torch.tensor([[0.0, 1.0, 2.0]]), 1e4, 1, "top_k = 1 at T = 10,000", hint)
    _probs(fn, torch.tensor([[1.0, 2.0, 3.0]]), 1e10, 1, "top_k = 1 at T = 1e10 (-1e9 / T is -0.1)", hint)
    half = torch.tensor([[0.0, 1.0, 2.0]], dtype=torch.float16)
    _probs(fn, half, 1e5, 1, "float16 logits [0, 1, 2], top_k = 1 at T = 100,000: [0, 0, 1]",
           hint + "; in float16 even torch.finfo(dtype).min is only -65504, and -65504 / 100,000 is -0.66")



def _probs_tiny_temperature(fn):
    _probs(fn, torch.tensor([[1.0, 1.0, 0.0]]), 1e-7, None, "T = 1e-7 (not 0) on logits [1, 1, 0]: [0.5, 0.5, 0]",
           "only T == 0 is the argmax: a tiny positive T is still softmax(logits / T), which splits the "
           "probability between tied maxima (subtract the row's maximum first, then divide by T)")


def _probs_vanishing_temperature(fn):
    hint = ("subtract each row's maximum BEFORE dividing by T: at a tiny T, logits / T overflows to inf and "
            "inf - inf is NaN, while (logits - max) / T only runs to -inf, whose exponential is 0")
    _probs(fn, torch.tensor([[1.0, 0.5, 0.0]], dtype=torch.float64), 1e-310, None,
           "float64 logits [1, 0.5, 0] at T = 1e-310: [1, 0, 0]", hint)
    _probs(fn, torch.tensor([[1.0, 0.5, 0.0]]), 1e-39, None, "float32 logits [1, 0.5, 0] at T = 1e-39: [1, 0, 0]",
           hint)
    _probs(fn, torch.tensor([[3e30, 1e30, 0.0]]), 1e-9, None, "float32 logits [3e30, 1e30, 0] at T = 1e-9: [1, 0, 0]",
           hint)


def _probs_confident(fn):
    _probs(fn, torch.tensor([[1000.0, 999.0, 0.0]], dtype=torch.float64), 0.5, None,
           "float64 logits of 1000: exp(1000 / T) overflows",
           "torch.softmax subtracts the maximum first; a hand-written exp(logits / T) / sum gives inf / inf = NaN")


# --- checks: attend_with_cache -------------------------------------------------------------


def _step_inputs(seed, batch, t, d_model, d_k, d_v, dtype=torch.float32):
    randn = draws(seed)
    x = randn(batch, t + 1, d_model).to(dtype)  # the past t tokens and the new one
    W_q, W_k, W_v = randn(d_k, d_model).to(dtype), randn(d_k, d_model).to(dtype), randn(d_v, d_model).to(dtype)
    return x, W_q, W_k, W_v


def _step_expected(x, W_q, W_k, W_v):
    """Attention of the last position to every position, entry by entry (no cache)."""
    x, W_q, W_k, W_v = (z.detach().double() for z in (x, W_q, W_k, W_v))
    batch, t1, _ = x.shape
    d_k = W_q.shape[0]
    outs = []
    for b in range(batch):
        q = W_q @ x[b, -1]
        scores = torch.stack([(W_k @ x[b, j]) @ q / math.sqrt(d_k) for j in range(t1)])
        w = torch.exp(scores - scores.max())
        w = w / w.sum()
        outs.append(sum(w[j] * (W_v @ x[b, j]) for j in range(t1))[None])
    K = torch.einsum("btd,kd->btk", x, W_k)
    V = torch.einsum("btd,vd->btv", x, W_v)
    return torch.stack(outs), K, V


def _step(fn, inputs, case, hint):
    x, W_q, W_k, W_v = inputs
    t = x.shape[1] - 1
    expected_out, K, V = (z.to(x.dtype) for z in _step_expected(x, W_q, W_k, W_v))
    K_cache, V_cache = K[:, :t].clone(), V[:, :t].clone()
    got = call(fn, case, hint, x_new=x[:, t:], K_cache=K_cache, V_cache=V_cache, W_q=W_q, W_k=W_k, W_v=W_v)
    if not isinstance(got, tuple) or len(got) != 3:
        raise Mismatch(f"{case}: expected a tuple (out, K, V), got {type(got).__name__}. Hint: return "
                       "out, K, V")
    out, K_got, V_got = got
    expect_close(K_got, K, f"{case}, the returned keys K", "K = torch.cat([K_cache, x_new @ W_k.T], dim=1): the "
                 "new key, made with W_k, appended at the END, so key j stays the key of position j")
    expect_close(V_got, V, f"{case}, the returned values V", "append the new value as well, after the cached ones: "
                 "torch.cat([V_cache, v_new], dim=1); keys and values must stay paired")
    expect_close(out, expected_out, f"{case}, the output", hint)
    return out


def _step_by_hand(fn):
    x = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # a cached token, then the new one
    eye = torch.eye(2)
    _step(fn, (x, eye, eye, eye), "d = 2, identity weights, one cached token: out = "
          "softmax([0, 1] / sqrt(2)) @ [[1, 0], [0, 1]]",
          "the new query attends to the cached keys AND its own new key; scale the scores by 1/sqrt(d_k)")


def _step_rows_far_apart(fn):
    x = torch.tensor([[[1000.0, 0.0], [2.0, 0.0]], [[1.0, 0.0], [0.0, 0.0]]], dtype=torch.float64)
    eye = torch.eye(2, dtype=torch.float64)  # row 0's scores reach about 1414, row 1's are all 0
    _step(fn, (x, eye, eye, eye), "float64, two sequences whose largest scores are about 1414 apart",
          "subtract each row's own maximum score (a softmax over the keys does): one maximum over the whole "
          "batch sends the other row's exponentials to exp(-1414) = 0, even in float64, and 0 / 0 is NaN")


def _step_shapes(fn):
    _step(fn, _step_inputs(84, 2, 5, 6, 4, 3), "batch 2, 5 cached tokens, d_model 6, d_k 4, d_v 3",
          "q = x_new @ W_q.T (nn.Linear's layout), the scale is 1/sqrt(d_k) (d_k = W_q.shape[0], not d_model or "
          "d_v), and the softmax runs over the t + 1 keys")


def _step_empty(fn):
    _step(fn, _step_inputs(85, 3, 0, 4, 2, 5), "the first token: an empty cache (t = 0)",
          "with nothing cached the new token attends only to itself, so out = v_new; torch.cat works with an "
          "empty (batch, 0, d_k) tensor")


def _step_twice(fn):
    x, W_q, W_k, W_v = _step_inputs(86, 1, 3, 4, 4, 2)
    case = "two steps in a row, the second using the K and V the first returned"
    hint = "return the grown K and V so the next step can use them; do not change the caller's tensors in place"
    empty_k, empty_v = x.new_zeros(1, 0, 4), x.new_zeros(1, 0, 2)
    K, V = empty_k, empty_v
    for i in range(2):
        got = call(fn, case, hint, x_new=x[:, i:i + 1], K_cache=K, V_cache=V, W_q=W_q, W_k=W_k, W_v=W_v)
        if not isinstance(got, tuple) or len(got) != 3:
            raise Mismatch(f"{case}: expected a tuple (out, K, V), got {type(got).__name__}. Hint: return out, K, V")
        out, K, V = got
    expected, _, _ = _step_expected(x[:, :2], W_q, W_k, W_v)
    expect_close(out, expected.to(x.dtype), case, hint)


def _step_float64_gradients(fn):
    x, W_q, W_k, W_v = _step_inputs(87, 1, 2, 3, 2, 2, dtype=torch.float64)
    for w in (W_q, W_k, W_v):
        w.requires_grad_(True)
    case = "float64 inputs, weights that require gradients"
    hint = "stay in PyTorch operations in x's dtype: no .float(), .detach() or torch.no_grad()"
    out = _step(fn, (x, W_q, W_k, W_v), case, hint)
    expect_gradients_reach((out,), {"W_q": W_q, "W_k": W_k, "W_v": W_v}, case, hint)


def _step_trained_cache(fn):
    x, W_q, W_k, W_v = _step_inputs(88, 2, 3, 4, 3, 2, dtype=torch.float64)
    _, K, V = _step_expected(x, W_q, W_k, W_v)
    inputs = dict(x_new=x[:, 3:], K_cache=K[:, :3].clone(), V_cache=V[:, :3].clone(), W_q=W_q, W_k=W_k, W_v=W_v)
    for name in ("K_cache", "V_cache", "W_q", "W_k", "W_v"):
        inputs[name].requires_grad_(True)
    case = "prefix tuning: cached keys and values that require gradients, like the weights (float64)"
    hint = ("the output and the grown K and V must all carry gradients, back to the cached keys and values too: "
            "no .detach() or torch.no_grad() on the cache (the next step attends through the K and V you return)")
    got = call(fn, case, hint, **inputs)
    if not isinstance(got, tuple) or len(got) != 3:
        raise Mismatch(f"{case}: expected a tuple (out, K, V), got {type(got).__name__}. Hint: return out, K, V")
    expect_gradients_reach(got, inputs, case, hint)


EXERCISES = (
    Exercise("ch08-bpc", "bits per character", "bits_per_char",
             (_bits_uniform, _bits_by_hand, _bits_random, _bits_confident, _bits_rows_apart, _bits_very_confident,
              _bits_long_half, _bits_float64_gradients),
             bits_per_char, forbidden=("evaluate_bits_per_char",),
             allows=Allows(lambda randn: {"logits": randn(2, 4, 5), "ids": _IDS}, half=True)),
    Exercise("ch08-temperature", "sampling with a temperature and top-k", "temperature_probs",
             (_probs_temperatures, _probs_greedy, _probs_greedy_close, _probs_top_k, _probs_top_k_on_logits,
              _probs_tie_at_k,
              _probs_no_top_k, _probs_confident, _probs_half_precision, _probs_small_temperature_half,
              _probs_dropped_stay_dropped, _probs_tiny_temperature, _probs_vanishing_temperature),
             temperature_probs, forbidden=("next_token_probs", "sample_next_token", "softargmax", "hardargmax")),
    Exercise("ch08-cache", "one step of the key-value cache", "attend_with_cache",
             (_step_by_hand, _step_rows_far_apart, _step_shapes, _step_empty, _step_twice, _step_float64_gradients, _step_trained_cache),
             attend_with_cache, forbidden=("KVCache", "MultiHeadAttention", "scaled_dot_product_attention",
                                           "MultiheadAttention"),
             allows=Allows(lambda randn: dict(x_new=randn(2, 1, 4), K_cache=randn(2, 3, 3), V_cache=randn(2, 3, 2),
                                              W_q=randn(3, 4), W_k=randn(3, 4), W_v=randn(2, 4)),
                           half=True, large={"W_q": 100.0})),
)

__all__ = ["EXERCISES", "bits_per_char", "temperature_probs", "attend_with_cache", "Mismatch"]
