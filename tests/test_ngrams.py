"""Bigram embeddings: the table, the lookup, and the classifier that uses them (chapter 7)."""

import random

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import BigramEmbedding, TransformerClassifier, Vocab, count_bigrams
from companion.models.sentiment import CONFIGS, build_classifier, load_classifier, save_classifier


def pairs(keys, vocab_size):
    return [(int(k) // vocab_size, int(k) % vocab_size) for k in keys]


def test_count_bigrams_keeps_the_most_frequent_pairs_sorted_by_key():
    sequences = [[2, 3, 4, 2, 3], [5, 2, 3, 1, 4], [4, 2, 0, 0]]
    # (2,3) x3, (4,2) x2, (3,4) x1, (5,2) x1; pairs with <unk>=1 or <pad>=0 never count
    assert pairs(count_bigrams(sequences, 6, max_size=10, min_freq=1), 6) == [(2, 3), (3, 4), (4, 2), (5, 2)]
    assert pairs(count_bigrams(sequences, 6, max_size=10, min_freq=2), 6) == [(2, 3), (4, 2)]
    assert pairs(count_bigrams(sequences, 6, max_size=1, min_freq=1), 6) == [(2, 3)]
    # ties (3,4) and (5,2), both seen once, are broken by key, not by the order of the data
    assert pairs(count_bigrams(sequences, 6, max_size=3, min_freq=1), 6) == [(2, 3), (3, 4), (4, 2)]
    assert torch.equal(count_bigrams(sequences[::-1], 6, max_size=3, min_freq=1),
                       count_bigrams(sequences, 6, max_size=3, min_freq=1))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.integers(0, 7), min_size=1, max_size=9), min_size=1, max_size=6), st.integers(0, 2**31))
def test_lookup_finds_exactly_the_pairs_in_the_table(sequences, seed):
    """Against a plain dict: position i gets the row of (t[i-1], t[i]) when that pair is in the table, else 0."""
    vocab_size = 8
    all_pairs = [(a, b) for a in range(2, 8) for b in range(2, 8)]
    table = sorted(random.Random(seed).sample(all_pairs, 12))
    module = BigramEmbedding(torch.tensor([a * vocab_size + b for a, b in table]), vocab_size, d_model=4)
    row = {pair: i + 1 for i, pair in enumerate(table)}
    t = max(len(s) for s in sequences)
    tokens = torch.tensor([s + [0] * (t - len(s)) for s in sequences])
    expected = [[0] + [row.get((s[i - 1], s[i]), 0) for i in range(1, t)] for s in tokens.tolist()]
    assert module.lookup(tokens).tolist() == expected


def test_bigram_vectors_are_the_scaled_table_rows_and_zero_elsewhere():
    torch.manual_seed(0)
    module = BigramEmbedding(torch.tensor([2 * 10 + 3]), 10, d_model=4).eval()
    out = module(torch.tensor([[2, 3, 3, 2]]))
    torch.testing.assert_close(out[0, 1], module.embedding.weight[1] * 2.0)  # sqrt(d_model) = 2
    assert out[0, [0, 2, 3]].abs().sum() == 0


def test_classifier_with_bigrams_ignores_padding_and_changes_with_word_order():
    torch.manual_seed(0)
    keys = count_bigrams([[2, 3, 4, 5, 6]], 30, max_size=10, min_freq=1)
    model = TransformerClassifier(30, 2, d_model=16, num_heads=2, pooling="mean", dropout=0.0, bigram_keys=keys).eval()
    tokens = torch.tensor([[2, 3, 4, 5, 6]])
    padded = torch.cat([tokens, torch.zeros(1, 3, dtype=torch.long)], dim=1)
    torch.testing.assert_close(model(padded)[0], model(tokens)[0])
    # the pairs see word order: reversed, no pair is known
    assert model.bigrams.lookup(tokens).tolist() == [[0, 1, 2, 3, 4]]
    assert model.bigrams.lookup(tokens.flip(1)).tolist() == [[0, 0, 0, 0, 0]]


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_classifier_adds_each_pair_vector_to_its_second_word(pooling, monkeypatch):
    """What reaches the encoder layers is words + positions + the pair ending at each word."""
    torch.manual_seed(0)
    keys = count_bigrams([[2, 3, 4, 5]], 30, max_size=10, min_freq=1)
    model = TransformerClassifier(30, 2, d_model=8, num_heads=2, pooling=pooling, dropout=0.0, bigram_keys=keys).eval()
    seen = {}
    run_layers = model.encoder.encode
    monkeypatch.setattr(model.encoder, "encode", lambda x, **kw: (seen.setdefault("x", x), run_layers(x, **kw))[1])
    tokens = torch.tensor([[2, 3, 4, 5, 0]])
    model(tokens)
    words = tokens if pooling == "mean" else torch.tensor([[30, 2, 3, 4, 5, 0]])  # [CLS] has id 30
    pairs = model.bigrams(tokens)
    if pooling == "cls":
        pairs = torch.cat([torch.zeros(1, 1, 8), pairs], dim=1)  # [CLS] ends no pair
    assert pairs.abs().sum() > 0
    torch.testing.assert_close(seen["x"], model.encoder.embed(words) + pairs)


def test_cls_pooling_with_bigrams_gives_cls_no_pair():
    keys = count_bigrams([[2, 3]], 10, max_size=5, min_freq=1)
    model = TransformerClassifier(10, 2, d_model=8, num_heads=2, pooling="cls", bigram_keys=keys)
    logits, weights = model(torch.tensor([[2, 3, 0]]), need_weights=True)
    assert logits.shape == (1, 2) and weights[0].shape == (1, 2, 4, 4)


def test_save_and_load_round_trip_with_bigrams(tmp_path):
    vocab = Vocab.build([["not", "good", "film", "good"]])
    ids = [vocab.encode(["not", "good", "film", "not", "good"])]
    config = {**CONFIGS["course"], "vocab": len(vocab), "bigrams": 5}
    keys = count_bigrams(ids, len(vocab), config["bigrams"])
    torch.manual_seed(0)
    model = build_classifier(config, vocab, keys).eval()
    save_classifier(tmp_path / "m.pt", model, vocab, config)
    loaded, _, _ = load_classifier(tmp_path / "m.pt", device=torch.get_default_device())
    assert torch.equal(loaded.bigrams.keys, keys)
    tokens = torch.tensor(ids)
    torch.testing.assert_close(loaded(tokens)[0], model(tokens)[0])


@pytest.mark.parametrize("bigrams, keys, message", [
    (100, None, r"config has bigrams=100 but bigram_keys is missing"),
    (0, torch.tensor([5]), r"config has bigrams=0 but bigram_keys is given"),
])
def test_build_classifier_checks_config_and_table_agree(bigrams, keys, message):
    vocab = Vocab.build([["a", "b"]])
    with pytest.raises(ValueError, match=message):
        build_classifier({**CONFIGS["course"], "bigrams": bigrams}, vocab, keys)
