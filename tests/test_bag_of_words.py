"""Chapter 7's TF-IDF + logistic regression baseline."""

import pytest
import torch

from companion.models.bag_of_words import train_tfidf, words_and_pairs


def test_features_are_the_words_then_each_adjacent_pair():
    assert words_and_pairs(["not", "good", "at", "all"]) == ["not", "good", "at", "all", "not good", "good at",
                                                            "at all"]
    assert words_and_pairs(["one"]) == ["one"] and words_and_pairs([]) == []


def reviews():
    """A task only a word pair solves: "not good" is negative, "good" alone positive."""
    train = ([["a", "good", "film"], ["not", "good", "film"], ["good", "story"], ["not", "good", "story"]] * 5,
             [1, 0, 1, 0] * 5)
    val = ([["good", "acting"], ["not", "good", "acting"]] * 3, [1, 0] * 3)
    return train, val


def test_it_learns_from_pairs_and_chooses_C_on_validation():
    train, val = reviews()
    baseline = train_tfidf(train, val, Cs=(0.01, 10.0))
    assert set(baseline.val_accuracy) == {0.01, 10.0}
    assert baseline.val_accuracy[baseline.C] == max(baseline.val_accuracy.values())
    assert baseline.accuracy(*val) == 1.0 and baseline.seconds > 0
    assert "not good" in baseline.vectorizer.vocabulary_ and "acting" not in baseline.vectorizer.vocabulary_
    assert baseline.num_features == len(baseline.vectorizer.vocabulary_)


def test_predict_gives_one_label_per_review_and_agrees_with_accuracy():
    train, val = reviews()
    baseline = train_tfidf(train, val, Cs=(10.0,))
    texts = [["not", "good", "acting"], ["good", "acting"], ["not", "good", "story"]]
    predicted = baseline.predict(texts)
    assert predicted.dtype == torch.long and predicted.shape == (3,)
    assert predicted.tolist() == [0, 1, 0]
    labels = [0, 0, 0]
    assert baseline.accuracy(texts, labels) == (predicted == torch.tensor(labels)).double().mean().item() == 2 / 3


def test_predict_refuses_untokenised_reviews():
    baseline = train_tfidf(*reviews(), Cs=(10.0,))
    with pytest.raises(TypeError, match="tokenised reviews"):
        baseline.predict(["not good acting"])


@pytest.mark.parametrize("Cs", [(), (0.0,), (1.0, -2.0), (True,)])
def test_a_bad_C_is_refused(Cs):
    with pytest.raises(ValueError, match="Cs must be a non-empty list of positive numbers"):
        train_tfidf(*reviews(), Cs=Cs)
