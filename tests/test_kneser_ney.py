"""Interpolated Kneser-Ney (chapter 8): normalised in every context, equal to a hand computation
on a tiny corpus, and equal to NLTK's implementation given the same counts and discount."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.models.ngram_lm import KneserNeyLM, NGramLM, fit_kneser_ney


def markov_text(seed, length, V, used=None):
    """A random first-order Markov chain over ``used`` of the ``V`` ids (the rest never occur)."""
    rng = np.random.default_rng(seed)
    used = used or V
    table = rng.dirichlet(np.full(used, 0.3), size=used)
    ids = [0]
    for _ in range(length - 1):
        ids.append(rng.choice(used, p=table[ids[-1]]))
    return np.array(ids)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 5), discount=st.sampled_from([None, 0.3, 0.75, 1.0]))
def test_every_context_sums_to_one_unseen_ones_included(seed, n, discount):
    V = 7
    ids = markov_text(seed, 300, V, used=5)  # ids 5 and 6 never occur in training
    model = KneserNeyLM(n, V, discount).fit(ids)
    rng = np.random.default_rng(seed)
    for context in [ids[:n], rng.integers(0, V, n), np.array([6] * n), np.array([], dtype=np.int64)]:
        p = model.next_probs(context)
        assert p.shape == (V,) and bool((p > 0).all())  # every token possible, the unseen ones too
        assert math.isclose(p.sum(), 1.0, rel_tol=1e-12)


def test_by_hand_on_a_tiny_corpus():
    """"abab" with a = 0, b = 1, c = 2 (never seen), V = 3, a bigram model, one discount D = 0.5,
    the context padded with a: bigrams (a a), (a b), (b a), (a b), (b a)... listed below."""
    a, b, V, D = 0, 1, 3, 0.5
    model = KneserNeyLM(2, V, discount=D, start_id=a).fit(np.array([a, b, a, b]))
    # bigrams at each position, with the start padding a: (a,a) (a,b) (b,a) (a,b)
    # order 2 (raw counts): after a: a 1, b 2 (total 3, two types); after b: a 1 (total 1, one type)
    # order 1 (continuation counts, from the distinct bigrams (a,a) (a,b) (b,a)): a is preceded by
    #   {a, b}: 2; b by {a}: 1; total 3, two types
    p1 = {a: (2 - D + 2 * D / V) / 3, b: (1 - D + 2 * D / V) / 3, 2: (0 + 2 * D / V) / 3}
    assert math.isclose(sum(p1.values()), 1.0)
    expected_after_a = {w: (max(c - D, 0) + 2 * D * p1[w]) / 3 for w, c in {a: 1, b: 2, 2: 0}.items()}
    expected_after_b = {w: (max(c - D, 0) + 1 * D * p1[w]) / 1 for w, c in {a: 1, b: 0, 2: 0}.items()}
    np.testing.assert_allclose(model.next_probs([a]), [expected_after_a[w] for w in range(V)], rtol=1e-12)
    np.testing.assert_allclose(model.next_probs([b]), [expected_after_b[w] for w in range(V)], rtol=1e-12)
    np.testing.assert_allclose(model.next_probs([2]), [p1[w] for w in range(V)], rtol=1e-12)  # unseen context
    # log2_probs scores ids[1:] with the same distributions
    np.testing.assert_allclose(2 ** model.log2_probs(np.array([a, b, 2])),
                               [expected_after_a[b], expected_after_b[2]], rtol=1e-12)


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("discount", [0.3, 0.75])
def test_equals_nltk_given_the_same_counts(n, discount):
    """NLTK's interpolated Kneser-Ney on the same n-grams. NLTK's lowest level is the plain
    continuation-count unigram, which gives an unseen token probability 0; ours discounts it
    too and interpolates with the uniform distribution. That one formula is set to ours in a
    subclass; counting, continuation counts, the recursion and unseen contexts are NLTK's."""
    lm_module = pytest.importorskip("nltk.lm")
    from nltk.lm.smoothing import KneserNey

    V = 6
    ids = markov_text(1, 400, V, used=5)
    ours = KneserNeyLM(n, V, discount=discount, start_id=0).fit(ids)
    padded = [0] * (n - 1) + ids.tolist()
    grams = [tuple(padded[i:i + n]) for i in range(len(ids))]  # the n-gram ending at each position
    counter = lm_module.NgramCounter([[g[n - m:] for g in grams for m in range(1, n + 1)]])

    class OursAtTheBottom(KneserNey):
        def unigram_score(self, word):
            bigrams = self.counts[2]
            preceded = {w: sum(1 for ctx in bigrams if bigrams[ctx][w] > 0) for w in range(V)}
            total, types = sum(preceded.values()), sum(1 for c in preceded.values() if c > 0)
            return (max(preceded[word] - self.discount, 0) + self.discount * types / V) / total

    theirs = lm_module.models.InterpolatedLanguageModel(OursAtTheBottom, n, vocabulary=lm_module.Vocabulary(
        range(V)), counter=counter, params={"discount": discount, "order": n})
    rng = np.random.default_rng(0)
    contexts = [tuple(padded[i:i + n - 1]) for i in range(0, 60, 7)] + [tuple(rng.integers(0, V, n - 1))
                                                                        for _ in range(5)]
    for context in contexts:
        expected = [theirs.unmasked_score(w, context) for w in range(V)]
        np.testing.assert_allclose(ours.next_probs(list(context)), expected, rtol=1e-10, atol=1e-14)


def test_kneser_ney_beats_add_k_on_held_out_text():
    V = 12
    train, held = markov_text(3, 6_000, V), markov_text(3, 9_000, V)[6_000:]
    for n in (3, 4):
        kn = KneserNeyLM(n, V).fit(train).bits_per_char(held)
        add_k = min(NGramLM(n, V, k).fit(train).bits_per_char(held) for k in (1.0, 0.3, 0.1, 0.03, 0.01))
        assert kn < add_k


def test_fit_kneser_ney_picks_the_discount_with_the_lowest_validation_bits():
    V = 8
    train, valid = markov_text(4, 3_000, V), markov_text(5, 1_000, V)
    model, scores = fit_kneser_ney(3, train, valid, V, discounts=(None, 0.5, 1.0))
    assert set(scores) == {None, 0.5, 1.0} and model.discount == min(scores, key=scores.get)
    assert math.isclose(model.bits_per_char(valid), min(scores.values()))


@pytest.mark.parametrize("call,message", [
    (lambda: KneserNeyLM(0, 5), "n must be"),
    (lambda: KneserNeyLM(3, 5, discount=1.5), r"discount must be None \(modified Kneser-Ney\) or a number in \(0, 1\]"),
    (lambda: KneserNeyLM(3, 5, discount=0), r"discount must be None"),
    (lambda: KneserNeyLM(3, 5).log2_probs([1, 2]), r"call fit\(train_ids\) first"),
    (lambda: KneserNeyLM(2, 5).fit([1, 7]), r"ids must hold ids in \[0, vocab_size=5\)"),
    (lambda: KneserNeyLM(20, 89), "does not fit the int64 keys"),
])
def test_misuse_is_explained(call, message):
    with pytest.raises(ValueError, match=message):
        call()
