"""Chapter 6 exercises: the decoder's causal mask, additive (Bahdanau) attention, greedy
decoding, and the position-wise feed-forward network as a 1-D convolution.

Checks compare with values computed by hand or by plain PyTorch (loops over positions,
``nn.Linear``-style formulas, small hand-made "models" whose next token is known), never with
the solutions. Their cases keep t_q != t_k and t != d_model, except where a square shape is
the trap: a transposed Conv1d input only runs silently when t == d_model, and it must fail
there too.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._core import (Allows, Exercise, Mismatch, call, draws, expect_close, expect_equal,
                    expect_gradients_reach)

# --- reference solutions (shown in the book) ------------------------------------


def decoder_mask(t_q, t_k):
    """bool (t_q, t_k), True = may attend: the queries are the last t_q of t_k
    positions, so query i (position t_k - t_q + i) sees keys 0 .. t_k - t_q + i."""
    ones = torch.ones(t_q, t_k, dtype=torch.bool)
    return torch.tril(ones, diagonal=t_k - t_q)   # keep the diagonal, hide the future


def additive_attention(s, H, mask, W_q, W_k, v):
    """s (batch, d_s), H (batch, t, d_h), mask bool (batch, t) or None,
    W_q (d_a, d_s), W_k (d_a, d_h), v (d_a,)
    -> context (batch, d_h), weights (batch, t)."""
    hidden = torch.tanh((s @ W_q.T)[:, None, :] + H @ W_k.T)   # (batch, t, d_a)
    scores = hidden @ v                                         # (batch, t)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))       # padding: weight 0
    weights = torch.softmax(scores, dim=-1)                     # over the t positions
    context = (weights[:, :, None] * H).sum(dim=1)              # (batch, d_h)
    return context, weights


def greedy(model, src, bos_id, eos_id, pad_id, max_len):
    """model(src, prefix (batch, i)) -> logits (batch, i, vocab).
    Returns int64 (batch, 1 + n), n <= max_len: BOS, then the most likely token
    at each step, fed back; pad_id after a row's EOS; stop once every row ended."""
    out = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        logits = model(src, out)                      # (batch, i, vocab)
        token = logits[:, -1].argmax(dim=-1)          # the last position's guess
        token = torch.where(done, pad_id, token)      # finished rows get padding
        out = torch.cat([out, token[:, None]], dim=1)
        done = done | (token == eos_id)
        if done.all():
            break
    return out


def conv_feed_forward(x, W1, b1, W2, b2):
    """x (batch, t, d_model); W1 (d_ff, d_model), b1 (d_ff,), W2 (d_model, d_ff),
    b2 (d_model,) as nn.Linear stores them -> (batch, t, d_model), with conv1d."""
    h = x.transpose(1, 2)                        # (batch, d_model, t): channels first
    h = F.relu(F.conv1d(h, W1[:, :, None], b1))  # kernel (d_ff, d_model, 1)
    h = F.conv1d(h, W2[:, :, None], b2)          # (batch, d_model, t)
    return h.transpose(1, 2)                     # (batch, t, d_model)


# --- checks -----------------------------------------------------------------------

# decoder_mask --------------------------------------------------------------------


def _mask_expected(t_q, t_k):
    """Entry by entry: query i sits at position t_k - t_q + i and sees keys up to it."""
    return torch.tensor([[j <= t_k - t_q + i for j in range(t_k)] for i in range(t_q)], dtype=torch.bool)


def _mask(fn, t_q, t_k, case, hint):
    got = call(fn, case, hint, t_q=t_q, t_k=t_k)
    if isinstance(got, torch.Tensor) and got.dtype != torch.bool:
        raise Mismatch(f"{case}: expected a bool tensor (True = may attend, the convention of "
                       f"F.scaled_dot_product_attention and of companion), got dtype {got.dtype}. Hint: build it "
                       "from torch.ones(..., dtype=torch.bool), or compare (e.g. j <= i); an additive mask of 0 "
                       "and -inf is another convention")
    expect_equal(got, _mask_expected(t_q, t_k), case, hint)


def _mask_by_hand(fn):
    _mask(fn, 3, 3, "t_q = t_k = 3 (training): [[T, F, F], [T, T, F], [T, T, T]]",
          "position i may attend to itself and to every earlier position: the diagonal is True, everything "
          "above it False (the lower triangle, diagonal included)")


def _mask_one(fn):
    _mask(fn, 1, 1, "a single position: [[True]]",
          "the first position sees itself: hiding the diagonal leaves it nothing to attend to")


def _mask_longer(fn):
    _mask(fn, 6, 6, "t_q = t_k = 6", "row i has i + 1 True entries, then False")


def _mask_new_queries(fn):
    _mask(fn, 2, 5, "t_q = 2 new queries over t_k = 5 keys: [[T, T, T, T, F], [T, T, T, T, T]]",
          "the queries are the LAST t_q positions: query i is position t_k - t_q + i, and a triangle that starts "
          "at the top-left corner of a wide matrix hides keys the query may see")


def _mask_three_of_seven(fn):
    _mask(fn, 3, 7, "t_q = 3 new queries over t_k = 7 keys (a case not printed on the page)",
          "query i is position t_k - t_q + i: it sees keys 0 .. t_k - t_q + i")


def _mask_one_new_query(fn):
    _mask(fn, 1, 7, "one new query (the newest token) over 7 keys: it sees all of them",
          "when decoding one token at a time, the newest position is the last one and every earlier key is in "
          "its past")


# additive_attention --------------------------------------------------------------


def _additive_expected(s, H, mask, W_q, W_k, v):
    """Position by position: score_j = sum_a v_a tanh((W_q s)_a + (W_k h_j)_a), then softmax."""
    batch, t, _ = H.shape
    s, H, W_q, W_k, v = (z.detach() for z in (s, H, W_q, W_k, v))
    scores = torch.empty(batch, t, dtype=H.dtype)
    for b in range(batch):
        for j in range(t):
            scores[b, j] = (v * torch.tanh(torch.mv(W_q, s[b]) + torch.mv(W_k, H[b, j]))).sum()
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=H.dtype))
    weights = torch.exp(scores - scores.max(dim=1, keepdim=True).values)
    weights = weights / weights.sum(dim=1, keepdim=True)
    context = torch.stack([sum(weights[b, j] * H[b, j] for j in range(t)) for b in range(batch)])
    return context, weights


def _additive(fn, inputs, case, hint):
    got = call(fn, case, hint, **inputs)
    if not (isinstance(got, tuple) and len(got) == 2):
        raise Mismatch(f"{case}: expected a pair (context, weights), got {type(got).__name__}"
                       f"{'' if not isinstance(got, tuple) else f' of length {len(got)}'}. Hint: return "
                       "context, weights")
    context, weights = _additive_expected(**inputs)
    expect_close(got[1], weights, case + " (the weights)", hint)
    expect_close(got[0], context, case + " (the context)", hint)
    return got


def _inputs(seed, batch, t, d_s, d_h, d_a, mask=None, dtype=torch.float32):
    randn = draws(seed)
    return dict(s=randn(batch, d_s).to(dtype), H=randn(batch, t, d_h).to(dtype), mask=mask,
                W_q=(randn(d_a, d_s) / math.sqrt(d_s)).to(dtype), W_k=(randn(d_a, d_h) / math.sqrt(d_h)).to(dtype),
                v=randn(d_a).to(dtype))


def _additive_by_hand(fn):
    one = torch.ones(1, 1)
    inputs = dict(s=torch.zeros(1, 1), H=torch.tensor([[[0.0], [1.0]]]), mask=None, W_q=one, W_k=one.clone(),
                  v=torch.ones(1))
    _additive(fn, inputs, "all widths 1, s = 0, h = [0, 1]: scores [tanh 0, tanh 1] = [0, 0.7616], weights "
              "[0.3183, 0.6817], context 0.6817",
              "score_j = v . tanh(W_q s + W_k h_j) (tanh inside, v outside), softmax over the positions j, "
              "context = sum_j weight_j h_j")


def _additive_shapes(fn):
    _additive(fn, _inputs(65, 3, 5, 4, 6, 7), "batch 3, t = 5, d_s = 4, d_h = 6, d_a = 7 (every size different)",
              "W_q s is (d_a,) and W_k h_j is (d_a,): with batches, s @ W_q.T is (batch, d_a) and H @ W_k.T is "
              "(batch, t, d_a); add them with a new axis for t; softmax over t (dim=-1 of the scores), "
              "not over the batch")


def _additive_padding(fn):
    inputs = _inputs(66, 2, 5, 3, 4, 5, mask=torch.tensor([[True] * 5, [True, True, False, False, False]]))
    inputs["H"][1, 2:] = 50.0  # padding with large values: it would dominate if it were attended to
    _additive(fn, inputs, "batch 2, the second source has 2 real tokens and 3 padding positions (True = real)",
              "set the scores of padding positions (mask False) to -inf before the softmax, so that their "
              "weights are 0 and the others still sum to 1; zeroing weights after the softmax leaves rows that "
              "do not sum to 1")


def _additive_padding_dominates(fn):
    # d_a = 2, v = [60, 60]: a score is near +120 where tanh saturates at +1 and near -120 at -1
    W_q, W_k, v = torch.zeros(2, 1), torch.ones(2, 1), torch.tensor([60.0, 60.0])
    H = torch.tensor([[[-3.0], [-4.0], [5.0], [6.0]]])  # two real tokens, then padding with scores near +120
    inputs = dict(s=torch.zeros(1, 1), H=H, mask=torch.tensor([[True, True, False, False]]), W_q=W_q, W_k=W_k, v=v)
    _additive(fn, inputs, "padding scores near +120, the real tokens' near -120 (a gap of about 240)",
              "mask before the softmax (-inf at padding), not after: a softmax over every position gives the "
              "real tokens exp(-240) = 0 in float32, and renormalising 0 / 0 gives NaN")


def _additive_real_far_below(fn):
    # d_a = 1, v = [c] with c < 0: the real token scores c * tanh(2), below the padding's c * tanh(0.1) and any fill
    for c in (-3e4, -3e9, -3e31):
        inputs = dict(s=torch.zeros(1, 1), H=torch.tensor([[[2.0], [0.1]]]), mask=torch.tensor([[True, False]]),
                      W_q=torch.ones(1, 1), W_k=torch.ones(1, 1), v=torch.tensor([c]))
        _additive(fn, inputs, f"v = [{c:g}]: the real token scores {c * math.tanh(2):,.4g}, the masked padding "
                  f"would score {c * math.tanh(0.1):,.4g}: weights [1, 0]",
                  "a real score can be any number, far below -1e4, -1e9 or -1e30 too (an additive -1e30 "
                  "mask is not enough either): fill the padding with -inf "
                  "(float('-inf'), or torch.finfo(dtype).min), so that it is below every real score")


def _additive_one(fn):
    _additive(fn, _inputs(67, 1, 1, 2, 3, 4), "batch of 1, a source of 1 token: weight 1, context = h_0",
              "softmax over the positions (one of them) gives weight 1 whatever the score")


def _additive_float64_gradients(fn):
    inputs = _inputs(68, 2, 4, 3, 5, 6, dtype=torch.float64)
    for name in ("s", "H", "W_q", "W_k", "v"):
        inputs[name].requires_grad_(True)
    case = "float64 inputs that require gradients (the scorer is trained)"
    hint = ("stay in PyTorch operations in the inputs' dtype: no .float(), .detach(), .item() or torch.no_grad(); "
            "build the -inf with masked_fill or torch.where")
    context, weights = _additive(fn, inputs, case, hint)
    expect_gradients_reach((context, weights), inputs, case, hint)
    # the context alone must train the scorer too (w.detach() in it would not): a fresh graph
    case = f"{case}, the context alone"
    context, _ = _additive(fn, inputs, case, hint)
    expect_gradients_reach((context,), inputs, case, hint)


# greedy --------------------------------------------------------------------------

_VOCAB = 9  # the checks' models: ids 0 (pad), 1 (BOS), 2 (EOS), 3..8


def _one_hot_logits(next_tokens: torch.Tensor) -> torch.Tensor:
    """(batch, i) next-token ids -> logits (batch, i, vocab) that make each the clear argmax."""
    return 5.0 * F.one_hot(next_tokens, _VOCAB).float() - 1.0


def _check_prefix(src, prefix):
    if not isinstance(prefix, torch.Tensor) or prefix.dim() != 2 or prefix.dtype != torch.long \
            or prefix.size(0) != src.size(0):
        got = f"{prefix.dtype} {tuple(prefix.shape)}" if isinstance(prefix, torch.Tensor) else type(prefix).__name__
        raise Mismatch(f"the model was called with a prefix of {got}; it takes the int64 tokens so far, "
                       f"(batch, i) = ({src.size(0)}, i), BOS first. Hint: start from a (batch, 1) column of "
                       "bos_id with dtype=torch.long, and grow it with torch.cat along dim=1")


def _counter(src, prefix):
    """At every position: next = the token there + 1 (3, 4, ... 8, then EOS); a decoder that sees only
    its own prefix, like a real one under the causal mask."""
    _check_prefix(src, prefix)
    start = src[:, :1].expand_as(prefix)  # BOS is followed by the row's first source token
    nxt = torch.where(prefix == 1, start, prefix + 1)
    nxt = torch.where(prefix >= _VOCAB - 1, torch.full_like(nxt, 2), nxt)  # after 8: EOS
    nxt = torch.where(prefix == 2, torch.full_like(nxt, 2), nxt)
    return _one_hot_logits(nxt)


def _reverser(src, prefix):
    """A perfect reversal model: position i predicts the i-th token of the reversed source, then EOS."""
    _check_prefix(src, prefix)
    batch, i = prefix.shape
    lengths = (src != 0).sum(dim=1)  # (batch,)
    nxt = torch.full((batch, i), 2, dtype=torch.long)
    for b in range(batch):
        for p in range(i):
            if p < lengths[b]:
                nxt[b, p] = src[b, lengths[b] - 1 - p]
    return _one_hot_logits(nxt)


def _greedy_expected(model, src, bos_id, eos_id, pad_id, max_len):
    """Row by row, one token at a time, with plain Python lists."""
    rows = []
    for b in range(src.size(0)):
        row = [bos_id]  # the starting BOS is not a written EOS, even when bos_id == eos_id
        while len(row) < max_len + 1 and (len(row) == 1 or row[-1] != eos_id):
            logits = model(src[b:b + 1], torch.tensor([row]))
            row.append(int(logits[0, -1].argmax()))
        rows.append(row)
    width = max(len(r) for r in rows)
    return torch.tensor([r + [pad_id] * (width - len(r)) for r in rows], dtype=torch.long)


def _greedy(fn, model, src, max_len, case, hint, bos_id=1, eos_id=2, pad_id=0, plain_model=None):
    """``plain_model``: the same model without the learner-facing recording, for the expected value."""
    got = call(fn, case, hint, model=model, src=src, bos_id=bos_id, eos_id=eos_id, pad_id=pad_id, max_len=max_len)
    if isinstance(got, torch.Tensor) and got.dtype != torch.long:
        raise Mismatch(f"{case}: expected token ids of dtype torch.int64, got {got.dtype}. Hint: start from "
                       "torch.full(..., bos_id, dtype=torch.long); argmax gives int64")
    expected = _greedy_expected(plain_model or model, src, bos_id, eos_id, pad_id, max_len)
    expect_equal(got, expected, case, hint)


def _greedy_by_hand(fn):
    case = "one source starting with 6, a model that counts up from it: BOS 6 7 8 EOS"
    hint = ("start from [BOS]; at each step call model(src, out) (here the model returns the logits tensor "
            "itself), take the argmax of the LAST position's logits (logits[:, -1]) over the vocabulary, append "
            "it to out and feed the longer out back in; stop after EOS")
    widths = []

    def recording(src, prefix):
        widths.append(prefix.shape[1] if isinstance(prefix, torch.Tensor) and prefix.dim() == 2 else None)
        return _counter(src, prefix)

    _greedy(fn, recording, torch.tensor([[6, 3]]), 5, case, hint, plain_model=_counter)
    if widths != [1, 2, 3, 4]:
        raise Mismatch(f"{case}: the model was called with prefixes of widths {widths}; expected [1, 2, 3, 4]: "
                       "one call per new token, with BOS and the tokens written so far (not a buffer padded to "
                       "max_len, and no extra calls)")


def _greedy_feeds_back(fn):
    _greedy(fn, _reverser, torch.tensor([[3, 4, 5, 6, 0], [7, 8, 0, 0, 0]]), 7,
            "a reversal model, sources [3, 4, 5, 6] and [7, 8]: [BOS 6 5 4 3 EOS] and [BOS 8 7 EOS PAD PAD]",
            "one model call per new token with everything generated so far; after a row's EOS write pad_id, and "
            "stop when every row has emitted EOS (the output is then as long as the longest row)")


def _greedy_max_len(fn):
    _greedy(fn, _counter, torch.tensor([[3], [5]]), 3,
            "max_len = 3 stops two rows that have not reached EOS: [BOS 3 4 5] and [BOS 5 6 7]",
            "generate at most max_len tokens after BOS, so the output has at most 1 + max_len columns; each "
            "is the argmax of the last position's logits (greedy: no sampling)")


def _greedy_ragged(fn):
    _greedy(fn, _counter, torch.tensor([[8], [4], [7]]), 8,
            "three rows that end at different steps: [BOS 8 EOS ...], [BOS 4 5 6 7 8 EOS], [BOS 7 8 EOS ...]",
            "a row that has ended keeps getting pad_id while the others go on; stop only when all rows ended")


def _greedy_ids(fn):
    _greedy(fn, _counter, torch.tensor([[5], [3]]), 6,
            "other special ids, BOS = 1, EOS = 7, PAD = 2: [BOS 5 6 EOS PAD PAD] and [BOS 3 4 5 6 EOS]",
            "use the bos_id, eos_id and pad_id arguments, not fixed numbers", eos_id=7, pad_id=2)


def _greedy_int32_source(fn):
    _greedy(fn, _counter, torch.tensor([[6, 3], [4, 3]], dtype=torch.int32), 5,
            "an int32 source [[6, 3], [4, 3]]: the output and the prefixes are int64 all the same",
            "src may be any integer dtype: build the output with dtype=torch.long, not src.new_full (which copies "
            "src's dtype)")


def _bos_is_eos_model(src, prefix):
    """GPT-2's convention, one id for BOS and EOS (here 2): position 0 is followed by the source's
    first token, every other token t by t + 1, and 5 by EOS."""
    _check_prefix(src, prefix)
    first = (torch.arange(prefix.shape[1]) == 0)[None, :]  # (1, i): the starting BOS
    nxt = torch.where(first, src[:, :1].expand_as(prefix), prefix + 1)
    nxt = torch.where(~first & (prefix >= 5), torch.full_like(nxt, 2), nxt)
    return _one_hot_logits(nxt)


def _greedy_bos_is_eos(fn):
    _greedy(fn, _bos_is_eos_model, torch.tensor([[3], [4]]), 6,
            "bos_id == eos_id == 2, as in GPT-2: [BOS 3 4 5 EOS] and [BOS 4 5 EOS PAD]",
            "the BOS that starts every row is not a written EOS: a row ends when the model writes eos_id, "
            "so test the tokens you append, not the row's last token before the first step",
            bos_id=2, eos_id=2, pad_id=0)


def _tie_model(src, prefix):
    """Every step ties two tokens for the highest logit: 5 and 7, then 3 and 8, then EOS (2) and 6."""
    _check_prefix(src, prefix)
    plan = [(5, 7), (3, 8), (2, 6)] + [(2, 4)] * _VOCAB
    logits = torch.zeros(*prefix.shape, _VOCAB)
    for p in range(prefix.shape[1]):
        logits[:, p, list(plan[p])] = 4.0
    return logits


def _greedy_ties(fn):
    _greedy(fn, _tie_model, torch.tensor([[3], [4]]), 6,
            "two tokens tie for the highest logit at every step (5 and 7, 3 and 8, EOS and 6): [BOS 5 3 EOS]",
            "on a tie take the smallest id, as argmax does (the statement says so); topk and sort do not "
            "promise which of equal values comes first")


def _wide_tie_model(src, prefix):
    """A vocabulary of 200 whose logits are all equal at the first step: the smallest id, 0, wins; then EOS."""
    _check_prefix(src, prefix)
    logits = torch.zeros(*prefix.shape, 200)
    logits[:, 1:, 2] = 1.0  # from the second step on, EOS
    return logits


def _greedy_wide_tie(fn):
    _greedy(fn, _wide_tie_model, torch.tensor([[3], [4]]), 4,
            "200 tokens all tied at the first step: the smallest id (0) wins, then EOS: [BOS 0 EOS]",
            "on a tie take the smallest id, as argmax does; sort and topk do not promise which of equal values "
            "comes first, and on a long row they do not return the first", pad_id=9)


def _greedy_max_len_zero(fn):
    _greedy(fn, _counter, torch.tensor([[3], [5]]), 0,
            "max_len = 0: no token after BOS, [[BOS], [BOS]]",
            "generate at most max_len tokens: with max_len = 0 the loop body never runs (a loop that calls the "
            "model before testing the count writes one token too many)")


def _pad_writer(src, prefix):
    """Writes 3, then 0 (the pad id, here a real token), then 4, then EOS, whatever the source."""
    _check_prefix(src, prefix)
    plan = torch.tensor([3, 0, 4] + [2] * _VOCAB)
    return _one_hot_logits(plan[:prefix.shape[1]].expand_as(prefix))


def _greedy_pad_as_a_token(fn):
    _greedy(fn, _pad_writer, torch.tensor([[5]]), 10,
            "a model whose greedy tokens are 3, 0 (= pad_id), 4, EOS: [BOS 3 0 4 EOS]",
            "a row ends only when it writes eos_id; a token equal to pad_id written by the model is a real "
            "token (keep a bool 'done' per row, do not infer it from the tokens)")


# conv_feed_forward ---------------------------------------------------------------


def _ffn_expected(x, W1, b1, W2, b2):
    """Token by token, as the Linear layers compute it: W2 relu(W1 x_i + b1) + b2."""
    x, W1, b1, W2, b2 = (z.detach() for z in (x, W1, b1, W2, b2))
    out = torch.empty(x.shape[0], x.shape[1], W2.shape[0], dtype=x.dtype)
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            out[b, i] = torch.mv(W2, torch.clamp(torch.mv(W1, x[b, i]) + b1, min=0)) + b2
    return out


def _ffn_inputs(seed, batch, t, d_model, d_ff, dtype=torch.float32):
    randn = draws(seed)
    return dict(x=randn(batch, t, d_model).to(dtype), W1=(randn(d_ff, d_model) / math.sqrt(d_model)).to(dtype),
                b1=randn(d_ff).to(dtype), W2=(randn(d_model, d_ff) / math.sqrt(d_ff)).to(dtype),
                b2=randn(d_model).to(dtype))


def _ffn(fn, inputs, case, hint):
    got = call(fn, case, hint, **inputs)
    expect_close(got, _ffn_expected(**inputs), case, hint)
    return got


def _ffn_by_hand(fn):
    inputs = dict(x=torch.tensor([[[1.0], [-1.0]]]), W1=torch.tensor([[2.0], [-3.0]]), b1=torch.tensor([0.0, 1.0]),
                  W2=torch.tensor([[1.0, 1.0]]), b2=torch.tensor([0.5]))
    _ffn(fn, inputs, "d_model = 1, d_ff = 2, tokens x = 1 and x = -1: outputs 2.5 and 4.5",
         "hidden = relu(W1 x + b1) ([2, 0] and [0, 4]), output = W2 hidden + b2; conv1d wants the input as "
         "(batch, channels = d_model, t) and the weight as (out_channels, in_channels, kernel = 1)")


def _ffn_shapes(fn):
    _ffn(fn, _ffn_inputs(69, 2, 5, 3, 8), "batch 2, t = 5, d_model = 3, d_ff = 8",
         "transpose x to (batch, d_model, t) before conv1d and back after it; W1[:, :, None] is the kernel "
         "(d_ff, d_model, 1), W2[:, :, None] is (d_model, d_ff, 1)")


def _ffn_square(fn):
    _ffn(fn, _ffn_inputs(70, 2, 4, 4, 6), "t = d_model = 4: a transposed input runs without an error here",
         "conv1d mixes channels (axis 1) and slides along axis 2: the channels must be the d_model features, "
         "so use x.transpose(1, 2), not x itself and not x.reshape(batch, d_model, t) (which scrambles tokens "
         "and features)")


def _ffn_one(fn):
    _ffn(fn, _ffn_inputs(71, 1, 1, 5, 2), "batch of 1, one token, d_ff = 2 < d_model = 5",
         "the hidden width comes from W1.shape[0] (d_ff) and the output width from W2.shape[0] (d_model)")


def _ffn_not_contiguous(fn):
    inputs = _ffn_inputs(72, 3, 2, 4, 5)
    inputs["x"] = inputs["x"].transpose(0, 1)  # (2, 3, 4) made by a transpose: not contiguous in memory
    _ffn(fn, inputs, "x (2, 3, 4) made by a transpose (not contiguous in memory), d_ff = 5",
         "view needs contiguous memory: transpose x to (batch, d_model, t) for conv1d (it accepts any strides), "
         "or use reshape rather than view")


def _ffn_uses_conv1d(fn):
    """The exercise is the convolution: count the calls of F.conv1d (nn.Conv1d calls it too) while fn runs."""
    calls = []
    original = F.conv1d

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    case = "the same network, watched: it must run through F.conv1d (or nn.Conv1d)"
    hint = ("write the two position-wise layers as 1-D convolutions with kernel size 1 (F.conv1d), the point of "
            "the exercise: elementwise products summed by hand, or F.conv2d, compute the same numbers another way")
    F.conv1d = counted
    try:
        _ffn(fn, _ffn_inputs(73, 2, 3, 4, 5), case, hint)
    finally:
        F.conv1d = original
    if len(calls) < 2:
        raise Mismatch(f"{case}: F.conv1d ran {len(calls)} time(s), expected one call per layer (2). Hint: {hint}")


def _ffn_float64_gradients(fn):
    inputs = _ffn_inputs(72, 2, 3, 4, 5, dtype=torch.float64)
    for name in inputs:
        inputs[name].requires_grad_(True)
    case = "float64 inputs that require gradients (the weights are trained)"
    hint = "stay in PyTorch operations in x's dtype: no .float(), .detach(), .numpy() or torch.no_grad()"
    expect_gradients_reach((_ffn(fn, inputs, case, hint),), inputs, case, hint)


_MASK25 = torch.tensor([[True, True, True, True, True], [True, False, True, False, False]])  # (2, 5)

EXERCISES = (
    Exercise("ch06-additive", "additive (Bahdanau) attention", "additive_attention",
             (_additive_by_hand, _additive_shapes, _additive_padding, _additive_padding_dominates,
              _additive_real_far_below, _additive_one, _additive_float64_gradients),
             additive_attention, forbidden=("AdditiveAttention",),
             allows=Allows(lambda randn: {"s": randn(2, 3), "H": randn(2, 5, 4), "mask": _MASK25, "W_q": randn(6, 3),
                                          "W_k": randn(6, 4), "v": randn(6)}, half=True)),
    Exercise("ch06-conv", "the feed-forward network as a 1-D convolution", "conv_feed_forward",
             (_ffn_by_hand, _ffn_shapes, _ffn_square, _ffn_one, _ffn_not_contiguous, _ffn_float64_gradients,
              _ffn_uses_conv1d),
             conv_feed_forward,
             forbidden=("@", "linear", "Linear", "matmul", "mm", "bmm", "mv", "einsum", "tensordot", "inner",
                        "addmm", "addmv", "baddbmm", "dot", "outer", "multi_dot", "chain_matmul"),
             allows=Allows(lambda randn: dict(x=randn(2, 3, 4), W1=0.5 * randn(5, 4), b1=randn(5), W2=0.5 * randn(4, 5),
                                              b2=randn(4)), half=True)),
    Exercise("ch06-causal", "the decoder's causal mask", "decoder_mask",
             (_mask_by_hand, _mask_one, _mask_longer, _mask_new_queries, _mask_three_of_seven, _mask_one_new_query),
             decoder_mask, forbidden=("causal_mask", "generate_square_subsequent_mask")),
    Exercise("ch06-greedy", "greedy decoding", "greedy",
             (_greedy_by_hand, _greedy_feeds_back, _greedy_max_len, _greedy_ragged, _greedy_ids, _greedy_bos_is_eos,
              _greedy_ties, _greedy_wide_tie, _greedy_max_len_zero, _greedy_pad_as_a_token,
              _greedy_int32_source),
             greedy, forbidden=("greedy_decode",)),
)

__all__ = ["EXERCISES", "decoder_mask", "additive_attention", "greedy", "conv_feed_forward", "Mismatch"]
