"""Misuse gets a clear error: what was expected, what arrived, and how to fix it."""

import ast
from pathlib import Path

import pytest
import torch
from torch import nn

import companion
from companion import (
    BigramEmbedding,
    EncoderLayer,
    LearnedPositionalEmbedding,
    MultiHeadAttention,
    PositionwiseFeedForward,
    SinusoidalPositionalEncoding,
    TransformerClassifier,
    causal_mask,
    copy_weights,
    padding_mask,
    scaled_dot_product_attention,
    softargmax,
)

q, k, v = torch.randn(2, 3, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 4)
mha = MultiHeadAttention(8, 2)
x = torch.randn(2, 3, 8)

MISUSES = {
    "d_model not divisible by num_heads": (
        lambda: MultiHeadAttention(100, 3), ValueError,
        r"d_model=100 is not divisible by num_heads=3 \(each head gets d_model // num_heads dimensions\)"),
    "query and key widths differ": (
        lambda: scaled_dot_product_attention(q, torch.randn(2, 5, 6), v), ValueError,
        r"query and key must have the same last dimension d_k.*\(2, 3, 8\).*\(2, 5, 6\)"),
    "key and value lengths differ": (
        lambda: scaled_dot_product_attention(q, k, torch.randn(2, 4, 4)), ValueError,
        r"key and value must have the same length t_k.*\(2, 5, 8\).*\(2, 4, 4\)"),
    "float mask": (
        lambda: scaled_dot_product_attention(q, k, v, mask=torch.zeros(3, 5)), TypeError,
        r"mask must have dtype torch.bool \(True = may attend\), got torch.float32.*build a bool one"),
    "int mask": (
        lambda: mha(x, x, x, mask=torch.ones(3, 3, dtype=torch.long)), TypeError,
        r"mask must have dtype torch.bool.*got torch.int64"),
    "mask that does not broadcast": (
        lambda: scaled_dot_product_attention(q, k, v, mask=torch.ones(3, 4, dtype=torch.bool)), ValueError,
        r"mask of shape \(3, 4\) does not broadcast to the attention scores .* = \(2, 3, 5\)"),
    "mask that would grow the scores": (
        lambda: scaled_dot_product_attention(q, k, v, mask=torch.ones(2, 1, 1, 5, dtype=torch.bool)), ValueError,
        r"mask of shape \(2, 1, 1, 5\) does not broadcast"),
    "query of the wrong rank": (
        lambda: mha(x[0], x[0], x[0]), ValueError,
        r"query must be 3-D \(batch, t_q, d_model\), got 2-D shape \(3, 8\)"),
    "query of the wrong width": (
        lambda: mha(torch.randn(2, 3, 6), x, x), ValueError,
        r"query must have last dimension d_model=8, got shape \(2, 3, 6\); construct MultiHeadAttention with d_model=6"),
    "key width differs from kdim": (
        lambda: MultiHeadAttention(8, 2, kdim=5)(x, torch.randn(2, 4, 8), torch.randn(2, 4, 8)), ValueError,
        r"key must have last dimension kdim=5, got shape \(2, 4, 8\)"),
    "batch sizes differ": (
        lambda: mha(x, torch.randn(3, 3, 8), torch.randn(3, 3, 8)), ValueError,
        r"same batch size, got 2, 3 and 3"),
    "dtypes differ": (
        lambda: scaled_dot_product_attention(q, k.double(), v), TypeError,
        r"query and key must have the same dtype, got torch.float32 and torch.float64"),
    "integer query": (
        lambda: scaled_dot_product_attention(q.long(), k, v), TypeError,
        r"query must be a floating-point tensor, got dtype torch.int64"),
    "query not a tensor": (
        lambda: scaled_dot_product_attention([[1.0]], k, v), TypeError,
        r"query must be a torch.Tensor.*got list"),
    "sequence longer than max_len (sinusoidal)": (
        lambda: SinusoidalPositionalEncoding(8, max_len=2)(x), ValueError,
        r"sequence length 3 is longer than max_len=2; truncate the input or build the module with max_len >= 3"),
    "sequence longer than max_len (learned)": (
        lambda: LearnedPositionalEmbedding(2, 8)(x), ValueError, r"sequence length 3 is longer than max_len=2"),
    "sequence longer than the classifier's max_len": (
        lambda: TransformerClassifier(10, 2, max_len=4)(torch.ones(1, 6, dtype=torch.long)), ValueError,
        r"sequence length 6 is longer than max_len=4; truncate"),
    "negative dropout": (
        lambda: MultiHeadAttention(8, 2, dropout=-0.1), ValueError,
        r"dropout must be in \[0, 1\) \(the probability of zeroing an element\), got -0.1"),
    "dropout of 1": (
        lambda: scaled_dot_product_attention(q, k, v, dropout_p=1.0), ValueError, r"dropout_p must be in \[0, 1\)"),
    "num_heads not an int": (
        lambda: MultiHeadAttention(8, 2.0), TypeError, r"num_heads must be a positive int, got float 2.0"),
    "zero heads": (lambda: MultiHeadAttention(8, 0), ValueError, r"num_heads must be a positive int, got 0"),
    "unknown activation": (
        lambda: PositionwiseFeedForward(8, 16, activation="tanh"), ValueError,
        r"activation must be one of 'relu', 'gelu', got 'tanh'"),
    "unknown pooling": (
        lambda: TransformerClassifier(10, 2, pooling="sum"), ValueError,
        r"pooling must be one of 'max', 'mean', 'cls', got 'sum'"),
    "float token ids": (
        lambda: TransformerClassifier(10, 2)(torch.ones(1, 3)), TypeError,
        r"tokens must hold integer token ids \(torch.long\), got dtype torch.float32"),
    "token id outside the vocabulary": (
        lambda: TransformerClassifier(10, 2)(torch.tensor([[1, 2, 10]])), ValueError,
        r"token ids must be in \[0, vocab_size=10\), got min 1 and max 10; map unknown words to an <unk> id"),
    "all-padding sequence": (
        lambda: TransformerClassifier(10, 2)(torch.tensor([[0, 0], [1, 2]])), ValueError,
        r"a sequence in the batch is entirely padding"),
    "bigram keys not sorted": (
        lambda: BigramEmbedding(torch.tensor([9, 4]), 5, 8), ValueError,
        r"keys must be sorted ascending and distinct, as count_bigrams returns them"),
    "empty bigram table": (
        lambda: BigramEmbedding(torch.tensor([], dtype=torch.long), 5, 8), ValueError,
        r"keys is empty: no bigram was frequent enough; lower min_freq"),
    "bigram counting with the wrong vocabulary size": (
        lambda: companion.count_bigrams([[2, 7, 3]], 5, max_size=10), ValueError,
        r"token ids must be in \[0, vocab_size=5\), got min 2 and max 7; pass ids from the vocabulary"),
    "float bigram keys": (
        lambda: BigramEmbedding(torch.tensor([1.0, 2.0]), 5, 8), TypeError, r"keys must be int64 \(torch.long\), got torch.float32"),
    "bigram keys from a larger vocabulary": (
        lambda: BigramEmbedding(torch.tensor([3, 25]), 5, 8), ValueError,
        r"keys must be in \[0, vocab_size\*\*2=25\); were they built with a different vocab_size\?"),
    "non-positive beta": (
        lambda: softargmax(torch.randn(3), beta=0.0), ValueError, r"beta must be a finite number > 0, got 0.0"),
    "padding_mask with both lengths and tokens": (
        lambda: padding_mask(torch.tensor([2]), tokens=torch.ones(1, 2, dtype=torch.long), pad_id=0), ValueError,
        r"padding_mask needs either lengths \(with optional max_len\) or tokens with pad_id"),
    "padding_mask length beyond max_len": (
        lambda: padding_mask(torch.tensor([2, 5]), max_len=4), ValueError,
        r"a sequence of length 5 does not fit max_len=4"),
    "causal_mask of a float length": (lambda: causal_mask(3.0), TypeError, r"t must be a positive int, got float 3.0"),
    "encoder layer input of the wrong width": (
        lambda: EncoderLayer(8, 2)(torch.randn(2, 3, 6)), ValueError,
        r"x must have last dimension d_model=8, got shape \(2, 3, 6\)"),
    "copy_weights between unrelated modules": (
        lambda: copy_weights(mha, nn.Linear(8, 8)), TypeError,
        r"copy_weights needs a companion module and its PyTorch counterpart, got MultiHeadAttention and Linear"),
    "copy_weights with different num_heads": (
        lambda: copy_weights(mha, nn.MultiheadAttention(8, 4, batch_first=True)), ValueError,
        r"num_heads differ: companion has 2, PyTorch 4"),
    "copy_weights to a sequence-first PyTorch module": (
        lambda: copy_weights(mha, nn.MultiheadAttention(8, 2)), ValueError, r"must be built with batch_first=True"),
    "copy_weights across norm placements": (
        lambda: copy_weights(EncoderLayer(8, 2), nn.TransformerEncoderLayer(8, 2, 32, batch_first=True, norm_first=True)),
        ValueError, r"norm_first differs: companion has False, PyTorch True"),
    "copy_weights across activations": (
        lambda: copy_weights(EncoderLayer(8, 2, 32), nn.TransformerEncoderLayer(8, 2, 32, batch_first=True, activation="gelu")),
        ValueError, r"activation differs: companion has 'relu', PyTorch 'gelu'"),
    "copy_weights with different sizes": (
        lambda: copy_weights(EncoderLayer(8, 2, 16), nn.TransformerEncoderLayer(8, 2, 32, batch_first=True)),
        ValueError, r"linear1.weight: companion has shape \(16, 8\), PyTorch \(32, 8\)"),
}


@pytest.mark.parametrize("name", list(MISUSES))
def test_misuse_raises_a_helpful_error(name):
    call, error, message = MISUSES[name]
    with pytest.raises(error, match=message):
        call()


def test_enough_distinct_misuses_are_covered():
    assert len(MISUSES) >= 12


def test_no_bare_assert_guards_in_the_package():
    """asserts vanish under python -O and give no useful message: public code raises instead."""
    for path in Path(companion.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        asserts = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert)]
        assert not asserts, f"{path.name} uses assert on lines {asserts}"
