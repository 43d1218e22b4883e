"""Chapter 9 exercises: one layer's weights from a checkpoint, BERT's input embeddings, and
sentence vectors by mean pooling.

Checks compare with values computed by hand or by plain loops (a LayerNorm written out, a
checkpoint dict built tensor by tensor, an average over the real tokens of each sentence),
never with the solutions. Their traps: token types that are not all 0; positions that must
start at 0; vectors of tiny variance, where LayerNorm's epsilon 1e-12 and PyTorch's default
1e-5 disagree; ids as uint8, which PyTorch's indexing reads as a boolean mask; a checkpoint with two
layers, where layer 0 is not layer 1, and one with 12, where the names of layer 1 start the names of
layers 10 and 11; names sorted, reversed and shuffled, so that no lookup is right by their
order; query, key and value weights of the same shape, so loading them in the wrong order is
caught only by their values; padded positions holding large vectors, on the right and on the left; a batch of 1 without padding, where pooling
over padding is right by luck.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._core import (Allows, Exercise, Mismatch, call, draws, expect_close,
                    expect_gradients_reach)

# --- reference solutions (shown in the book) ------------------------------------


def bert_embed(input_ids, token_type_ids, word, position, token_type, gamma, beta):
    """input_ids, token_type_ids: any integer dtype (batch, t). word (vocab, d),
    position (max_len, d), token_type (types, d), gamma and beta (d,): the
    tables. -> LayerNorm(word[id] + position[i] + token_type[type]),
    (batch, t, d), with BERT's epsilon 1e-12."""
    t = input_ids.shape[1]
    ids, types = input_ids.long(), token_type_ids.long()  # uint8: a mask
    x = word[ids] + token_type[types] + position[:t]  # positions 0..t-1
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps=1e-12)


def layer_weights(checkpoint, i):
    """checkpoint: dict name -> tensor (a BERT checkpoint's names); i: the layer.
    -> the state dict of the course's EncoderLayer for layer i."""
    def get(name):
        return checkpoint[f"encoder.layer.{i}.{name}"]

    state = {}
    for p in ("weight", "bias"):
        state[f"self_attn.W_qkv.{p}"] = torch.cat([    # [W_q; W_k; W_v]
            get(f"attention.self.query.{p}"), get(f"attention.self.key.{p}"),
            get(f"attention.self.value.{p}")])
        state[f"self_attn.W_o.{p}"] = get(f"attention.output.dense.{p}")
        state[f"norm1.{p}"] = get(f"attention.output.LayerNorm.{p}")
        state[f"feed_forward.linear1.{p}"] = get(f"intermediate.dense.{p}")
        state[f"feed_forward.linear2.{p}"] = get(f"output.dense.{p}")
        state[f"norm2.{p}"] = get(f"output.LayerNorm.{p}")
    return state


def sentence_vectors(hidden, attention_mask):
    """hidden (batch, t, d); attention_mask int or bool (batch, t), 1 = real token.
    -> (batch, d): the mean over each sentence's real tokens, L2-normalised."""
    keep = attention_mask[..., None].bool()                  # (batch, t, 1)
    acc = torch.promote_types(hidden.dtype, torch.float32)   # half precision sums in float32
    real = torch.where(keep, hidden.to(acc), 0.0)            # padding -> 0, whatever it held
    mean = real.sum(dim=1) / keep.sum(dim=1).to(acc)         # (batch, d)
    return (mean / mean.norm(dim=-1, keepdim=True)).to(hidden.dtype)


# --- checks: bert_embed -------------------------------------------------------------


def _layer_norm_by_hand(x, gamma, beta, eps):
    """Row by row: (x - mean) / sqrt(var + eps) * gamma + beta, var without Bessel's correction."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def _embed_expected(input_ids, token_type_ids, word, position, token_type, gamma, beta):
    batch, t = input_ids.shape
    rows = [[word[int(input_ids[b, i])].double() + position[i].double()
             + token_type[int(token_type_ids[b, i])].double() for i in range(t)] for b in range(batch)]
    x = torch.stack([torch.stack(r) for r in rows])
    return _layer_norm_by_hand(x, gamma.double(), beta.double(), 1e-12).to(word.dtype)


def _embed_tables(seed, vocab, max_len, types, d, scale=1.0, dtype=torch.float32):
    randn = draws(seed)
    word, position, token_type = (scale * randn(n, d) for n in (vocab, max_len, types))
    gamma, beta = 1 + 0.5 * randn(d), 0.5 * randn(d)
    return tuple(z.to(dtype) for z in (word, position, token_type, gamma, beta))


def _embed(fn, input_ids, token_type_ids, tables, case, hint):
    got = call(fn, case, hint, input_ids=input_ids, token_type_ids=token_type_ids, word=tables[0],
               position=tables[1], token_type=tables[2], gamma=tables[3], beta=tables[4])
    expect_close(got, _embed_expected(input_ids, token_type_ids, *tables), case, hint)
    return got


def _embed_small(fn):
    tables = _embed_tables(91, 7, 6, 2, 4)
    _embed(fn, torch.tensor([[1, 4, 2]]), torch.tensor([[0, 0, 0]]), tables,
           "one sentence of 3 tokens, every token type 0",
           "the input of layer 1 is LayerNorm(word[id] + position[i] + token_type[type]): token i gets position "
           "row i counting from 0 (position[:t]); LayerNorm of the sum over the last axis (d), with the biased "
           "variance (divide by d, as F.layer_norm does), eps = 1e-12, then * gamma + beta")


def _embed_positions(fn):
    tables = _embed_tables(92, 9, 8, 2, 5)
    _embed(fn, torch.tensor([[3, 3, 3, 3], [8, 0, 5, 1]]), torch.zeros(2, 4, dtype=torch.long), tables,
           "the same token 4 times: only the position tells them apart",
           "token i gets position row i, counting from 0 (position[:t]), the same rows for every sentence of the "
           "batch; the table has max_len >= t rows")


def _embed_types(fn):
    tables = _embed_tables(93, 9, 8, 3, 6)
    _embed(fn, torch.tensor([[2, 5, 7, 1, 4], [6, 6, 2, 3, 0]]),
           torch.tensor([[0, 0, 1, 1, 1], [0, 1, 1, 2, 2]]), tables,
           "two segments per sentence (token types 0, 1 and 2)",
           "add token_type[token_type_ids]: the type's row for each token, looked up like the word")


def _embed_eps(fn):
    tables = _embed_tables(94, 5, 4, 2, 8, scale=1e-4)
    _embed(fn, torch.tensor([[0, 1, 2, 3]]), torch.tensor([[0, 1, 0, 1]]), tables,
           "tables of size 1e-4: the sum's variance (about 1e-8) is below PyTorch's default epsilon 1e-5",
           "BERT's LayerNorm adds eps = 1e-12 to the variance, inside the square root: (z - mean) / "
           "sqrt(var + eps), with config.json's layer_norm_eps, not the default 1e-5 of PyTorch's LayerNorm")


def _embed_eps_half(fn):
    tables = _embed_tables(96, 5, 4, 2, 8, scale=1e-4, dtype=torch.float16)
    _embed(fn, torch.tensor([[1, 2, 3]]), torch.tensor([[0, 0, 0]]), tables,
           "float16 tables of size 1e-4: the squares of the deviations (about 1e-8) underflow float16",
           "in half precision the variance's squares underflow to 0, and a LayerNorm written out divides by "
           "sqrt(0 + 1e-12) into inf: use PyTorch's LayerNorm (which computes in float32) or compute in float32 "
           "and return the tables' dtype")


def _embed_integer_ids(fn):
    hint = ("PyTorch indexes with a uint8 (or bool) tensor as a mask, not with ids, and refuses int16 and int8 "
            "indices: convert both id tensors to int64 before you look them up")
    tables = _embed_tables(107, 6, 5, 2, 4)
    _embed(fn, torch.tensor([[5, 0, 3, 1], [2, 2, 4, 0]], dtype=torch.uint8),
           torch.tensor([[0, 0, 1, 1], [0, 1, 1, 1]], dtype=torch.uint8), tables,
           "input_ids and token_type_ids as uint8 (ids below 256 fit in a byte)", hint)
    tables = _embed_tables(108, 7, 4, 2, 3)
    _embed(fn, torch.tensor([[6, 1, 0]], dtype=torch.int16), torch.tensor([[1, 0, 1]], dtype=torch.int32),
           tables, "input_ids as int16 and token_type_ids as int32", hint)


def _embed_float64_gradients(fn):
    tables = tuple(z.requires_grad_() for z in _embed_tables(95, 6, 5, 2, 3, dtype=torch.float64))
    case = "float64 tables that require gradients (BERT learns all of them)"
    hint = ("compute with the tables given (indexing, +, F.layer_norm), in float64 for float64 tables (a float32 "
            "detour loses digits): no .detach() or "
            "torch.no_grad(), and no new nn.Embedding/nn.LayerNorm or nn.Parameter made from them, which would "
            "get the gradient instead of the tables")
    got = _embed(fn, torch.tensor([[5, 1]]), torch.tensor([[1, 0]]), tables, case, hint)
    names = ("word", "position", "token_type", "gamma", "beta")
    expect_gradients_reach((got,), dict(zip(names, tables)), case, hint)


def _embed_every_row_learns(fn):
    case = "input ids [[0, 3, 0, 2]] (id 0, [PAD], among them), tables that require gradients"
    hint = ("every row that an id selects gets a gradient, row 0 included: the statement asks for no padding "
            "row (padding_idx=0 would freeze row 0; Hugging Face's BertEmbeddings sets one, the course's "
            "BertEncoder does not)")
    tables = tuple(z.requires_grad_() for z in _embed_tables(96, 5, 4, 2, 3, dtype=torch.float64))
    got = _embed(fn, torch.tensor([[0, 3, 0, 2]]), torch.tensor([[0, 0, 1, 1]]), tables, case, hint)
    (grad,) = torch.autograd.grad((got * draws(97)(*got.shape).double()).sum(), tables[0], allow_unused=True)
    rows = [r for r in (0, 2, 3) if grad is None or not bool((grad[r] != 0).any())]
    if rows:
        raise Mismatch(f"{case}: no gradient reaches row{'s' if len(rows) > 1 else ''} "
                       f"{', '.join(map(str, rows))} of the word table. Hint: {hint}")


# --- checks: layer_weights ------------------------------------------------------------

_COURSE_NAMES = {  # the course's name -> the checkpoint's name in layer i (without .weight/.bias)
    "self_attn.W_o": "attention.output.dense",
    "norm1": "attention.output.LayerNorm",
    "feed_forward.linear1": "intermediate.dense",
    "feed_forward.linear2": "output.dense",
    "norm2": "output.LayerNorm",
}


def _fake_checkpoint(seed, num_layers, d, d_ff):
    """Random tensors with BERT's names and shapes: every tensor different, so any mix-up shows."""
    randn = draws(seed)
    shapes = {"attention.self.query": (d, d), "attention.self.key": (d, d), "attention.self.value": (d, d),
              "attention.output.dense": (d, d), "attention.output.LayerNorm": (d,),
              "intermediate.dense": (d_ff, d), "output.dense": (d, d_ff), "output.LayerNorm": (d,)}
    checkpoint = {"embeddings.word_embeddings.weight": randn(11, d)}
    for i in range(num_layers):
        for name, shape in shapes.items():
            checkpoint[f"encoder.layer.{i}.{name}.weight"] = randn(*shape)
            checkpoint[f"encoder.layer.{i}.{name}.bias"] = randn(shape[0])
    checkpoint["pooler.dense.weight"] = randn(d, d)
    return checkpoint


def _layer_expected(checkpoint, i):
    expected = {}
    for p in ("weight", "bias"):
        parts = [checkpoint[f"encoder.layer.{i}.attention.self.{n}.{p}"] for n in ("query", "key", "value")]
        expected[f"self_attn.W_qkv.{p}"] = torch.cat(parts)
        for course, name in _COURSE_NAMES.items():
            expected[f"{course}.{p}"] = checkpoint[f"encoder.layer.{i}.{name}.{p}"]
    return expected


def _which(tensor, checkpoint):
    """The checkpoint name of a tensor (or of each third of a stacked one), for the message."""
    def name_of(x):
        return next((n for n, v in checkpoint.items() if v.shape == x.shape and torch.equal(v, x)), None)

    if name_of(tensor):
        return name_of(tensor)
    if tensor.dim() >= 1 and tensor.shape[0] % 3 == 0:
        names = [name_of(part) for part in tensor.chunk(3)]
        layers = {n.split(".attention.self.")[0] for n in names if n}
        if all(names) and len(layers) == 1:  # e.g. "[query.weight; ...] of encoder.layer.10 stacked"
            parts = "; ".join(n.split("attention.self.")[-1] for n in names)
            return f"[{parts}] of {layers.pop()} stacked"
        if all(names):
            return "[" + "; ".join(names) + "] stacked"
    return None


def _layer(fn, checkpoint, i, case, hint):
    got = call(fn, case, hint, checkpoint=checkpoint, i=i)
    if not isinstance(got, dict):
        raise Mismatch(f"{case}: expected a dict from the course's names to tensors, got {type(got).__name__}. "
                       f"Hint: {hint}")
    expected = _layer_expected(checkpoint, i)
    missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
    if missing or extra:
        raise Mismatch(f"{case}: the keys must be exactly EncoderLayer's parameters; missing {missing}, "
                       f"unexpected {extra}. Hint: {hint}")
    for key, value in expected.items():
        tensor = got[key]
        if not isinstance(tensor, torch.Tensor) or tensor.shape != value.shape:
            what = tuple(tensor.shape) if isinstance(tensor, torch.Tensor) else type(tensor).__name__
            raise Mismatch(f"{case}: {key!r} should have shape {tuple(value.shape)}, got {what}. Hint: {hint}")
        if not torch.equal(tensor, value):
            source = _which(tensor, checkpoint)
            found = f"; it holds {source}" if source else ""
            raise Mismatch(f"{case}: {key!r} has the wrong values{found}. Hint: {hint}")


def _shuffled(checkpoint, seed):
    """The same entries in a seeded random order: a lookup must go by name, never by place."""
    items = list(checkpoint.items())
    order = torch.randperm(len(items), generator=torch.Generator().manual_seed(seed)).tolist()
    return dict(items[k] for k in order)


_BY_NAME = ("find each tensor by its full name, never by its place in the dict or the first name that "
            "starts or ends right: the checkpoint's names may come in any order")


def _layer_one(fn):
    _layer(fn, _fake_checkpoint(97, 1, 4, 6), 0, "a one-layer checkpoint, d_model 4, d_ff 6",
           "W_qkv stacks the query, key and value weights in that order (torch.cat along dim 0), and its bias "
           "the three biases the same way; each other module takes one checkpoint tensor, weight and bias")


def _layer_second(fn):
    _layer(fn, _fake_checkpoint(98, 2, 4, 6), 1, "layer i = 1 of a two-layer checkpoint",
           "read the names of layer i: f'encoder.layer.{i}.' + ..., not always layer 0")


def _layer_order(fn):
    checkpoint = _fake_checkpoint(99, 1, 6, 5)
    _layer(fn, checkpoint, 0, "d_model 6: query, key and value all (6, 6), so only their values tell them apart",
           "the order inside W_qkv is query, key, value: rows 0..d-1 are W_q, d..2d-1 W_k, 2d..3d-1 W_v; "
           "MultiHeadAttention splits them in that order")


def _layer_key_order(fn):
    checkpoint = _fake_checkpoint(105, 2, 3, 4)
    hint = ("find each tensor by its name, never by its place in the dict: a safetensors file lists its names "
            "sorted, so 'attention.output.LayerNorm' comes before 'attention.self.query'")
    _layer(fn, dict(sorted(checkpoint.items())), 1, "a two-layer checkpoint whose names are sorted (as in a "
           "safetensors file)", hint)
    _layer(fn, dict(reversed(checkpoint.items())), 0, "a two-layer checkpoint with its names in reverse order", hint)


def _layer_many(fn):
    hint = ("match the whole prefix f'encoder.layer.{i}.' with its final dot: 'encoder.layer.1' is also the "
            "start of 'encoder.layer.10' and 'encoder.layer.11'; " + _BY_NAME)
    checkpoint = _fake_checkpoint(104, 12, 2, 3)
    _layer(fn, checkpoint, 1, "layer i = 1 of a 12-layer checkpoint", hint)
    for i, seed in ((1, 204), (10, 205)):
        _layer(fn, _shuffled(checkpoint, seed), i, f"layer i = {i} of a 12-layer checkpoint whose names come "
               f"in a shuffled order", hint)


def _layer_norms(fn):
    hint = ("norm1 is the LayerNorm after attention (attention.output.LayerNorm), norm2 the one after the "
            "feed-forward block (output.LayerNorm); linear1 is intermediate.dense (d_ff, d_model), linear2 "
            "output.dense (d_model, d_ff)")
    checkpoint = _fake_checkpoint(100, 3, 5, 7)
    _layer(fn, checkpoint, 2, "layer 2 of 3, d_model 5, d_ff 7", hint)
    _layer(fn, _shuffled(checkpoint, 206), 2, "layer 2 of 3, its names in a shuffled order",
           hint + "; " + _BY_NAME)


# --- checks: sentence_vectors ------------------------------------------------------------


def _vectors_expected(hidden, attention_mask):
    """Sentence by sentence: average the real tokens' vectors, divide by the length of the average."""
    rows = []
    for b in range(hidden.shape[0]):
        real = [hidden[b, j].double() for j in range(hidden.shape[1]) if bool(attention_mask[b, j])]
        mean = sum(real) / len(real)
        rows.append(mean / math.sqrt(float((mean ** 2).sum())))
    return torch.stack(rows).to(hidden.dtype)


def _vectors(fn, hidden, attention_mask, case, hint):
    got = call(fn, case, hint, hidden=hidden, attention_mask=attention_mask)
    expect_close(got, _vectors_expected(hidden, attention_mask), case, hint)
    return got


def _vectors_one(fn):
    _vectors(fn, torch.tensor([[[3.0, 0.0], [1.0, 2.0]]]), torch.tensor([[1, 1]]),
             "one sentence, 2 tokens [3, 0] and [1, 2], no padding: mean [2, 1], unit length [2, 1] / sqrt(5)",
             "average over the tokens (dim=1), then divide by the L2 norm of the average, so every vector has "
             "length 1 and the dot product of two is their cosine similarity")


def _vectors_padding(fn):
    hidden = draws(101)(3, 5, 4)
    hidden[0, 3:] = 50.0  # padding holds whatever the model wrote there: large values here
    hidden[1, 2:] = -50.0
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1]])
    _vectors(fn, hidden, mask, "a padded batch: 3, 2 and 5 real tokens, padding holding large vectors",
             "average only where attention_mask is 1: select the real tokens (torch.where, or multiply by the "
             "mask), sum over the tokens (dim=1) and divide by each sentence's count; the padded vectors must not "
             "enter the sum. Then divide each sentence's average by its own norm (dim=-1, keepdim=True), not by "
             "one norm of the whole batch")


def _vectors_inf_padding(fn):
    hidden = draws(106)(2, 4, 3)
    hidden[0, 2:] = float("inf")  # "padding may hold any values": inf and NaN too
    hidden[1, 3] = float("nan")
    _vectors(fn, hidden, torch.tensor([[1, 1, 0, 0], [1, 1, 1, 0]]),
             "padding holding inf and NaN (the statement: padding may hold any values)",
             "multiplying by the mask is not enough: inf * 0 and NaN * 0 are NaN. Select the real tokens with "
             "torch.where(mask, hidden, 0) (or masked_fill) before summing")


def _vectors_half_sum(fn):
    hidden = torch.tensor([300.0, 400.0]).expand(1, 256, 2).to(torch.float16)
    _vectors(fn, hidden, torch.ones(1, 256, dtype=torch.long),
             "float16, 256 tokens of (300, 400): the sum (76,800, 102,400) overflows float16, the mean does not",
             "float16's largest number is 65504: accumulate a half-precision sum in float32 and convert the "
             "result back to hidden's dtype, or divide before you sum")


def _vectors_left_padding(fn):
    hidden = draws(105)(2, 4, 3)
    hidden[0, :2] = 40.0  # padding on the LEFT, as some tokenizers put it
    _vectors(fn, hidden, torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]]), "padding on the left: mask [0, 0, 1, 1]",
             "use the mask itself to choose the real tokens, not a count of them: padding is not always at the "
             "end")


def _vectors_bool(fn):
    hidden = draws(102)(2, 4, 3)
    _vectors(fn, hidden, torch.tensor([[True, True, True, False], [True, False, False, False]]),
             "a bool mask, one sentence of a single token",
             "a bool mask selects as an int one does (torch.where, or mask.to(hidden.dtype) to count); a "
             "sentence of one token is that token's vector, normalised")


def _vectors_float64_gradients(fn):
    hidden = draws(103)(2, 3, 5).double().requires_grad_()
    case = "float64 hidden states that require gradients (sentence-transformers trains through the pooling)"
    hint = ("stay in PyTorch operations that autograd follows: no .detach(), .numpy() or torch.no_grad(); float64 "
            "needs no float32 detour (.float() would round it), and the result is in hidden's dtype")
    got = _vectors(fn, hidden, torch.tensor([[1, 1, 0], [1, 1, 1]]), case, hint)
    expect_gradients_reach([got], {"hidden": hidden}, case, hint)


_MASK = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 1, 1, 1, 0]])  # padding at the end and at both ends

EXERCISES = (
    Exercise("ch09-layer-weights", "one layer's weights from a checkpoint", "layer_weights",
             (_layer_one, _layer_second, _layer_order, _layer_norms, _layer_key_order, _layer_many),
             layer_weights, forbidden=("layer_state_dict", "load_pretrained")),
    Exercise("ch09-embed", "BERT's input embeddings", "bert_embed",
             (_embed_small, _embed_positions, _embed_types, _embed_eps, _embed_eps_half, _embed_float64_gradients,
              _embed_every_row_learns, _embed_integer_ids),
             bert_embed, forbidden=("BertEncoder", "load_pretrained"),
             allows=Allows(lambda randn: dict(input_ids=torch.tensor([[1, 4, 2], [0, 3, 3]]),
                                              token_type_ids=torch.tensor([[0, 0, 1], [0, 1, 1]]), word=randn(5, 4),
                                              position=randn(6, 4), token_type=randn(2, 4), gamma=1 + 0.5 * randn(4),
                                              beta=0.5 * randn(4)), half=True)),
    Exercise("ch09-sentence-vectors", "sentence vectors by mean pooling", "sentence_vectors",
             (_vectors_one, _vectors_padding, _vectors_left_padding, _vectors_bool, _vectors_inf_padding,
              _vectors_half_sum, _vectors_float64_gradients),
             sentence_vectors, forbidden=("mean_pool", "sentence_embedding"),
             allows=Allows(lambda randn: {"hidden": randn(3, 5, 4), "attention_mask": _MASK}, half=True)),
)

__all__ = ["EXERCISES", "bert_embed", "layer_weights", "sentence_vectors", "Mismatch"]
