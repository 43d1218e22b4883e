"""The bag-of-words baseline of chapter 7: TF-IDF over words and word pairs, logistic regression.

A strong, cheap yardstick for review sentiment: it sees which words and adjacent word pairs a
review contains (weighted by how rare they are), never their order beyond a pair. It needs
scikit-learn (preinstalled in Colab; ``pip install 'attention-course-companion[imdb]'``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["words_and_pairs", "TfidfBaseline", "train_tfidf"]


def words_and_pairs(tokens: Sequence[str]) -> list[str]:
    """The features of one tokenised review: its words, then each adjacent pair as ``"a b"``."""
    tokens = list(tokens)
    return tokens + [f"{a} {b}" for a, b in zip(tokens, tokens[1:])]


@dataclass
class TfidfBaseline:
    """What :func:`train_tfidf` fitted: the vectorizer, the chosen model, and how it was chosen."""

    vectorizer: Any
    model: Any
    C: float
    val_accuracy: dict[float, float]  # every C tried -> its validation accuracy
    seconds: float

    @property
    def num_features(self) -> int:
        return len(self.vectorizer.vocabulary_)

    def predict(self, texts: Sequence[Sequence[str]]) -> torch.Tensor:
        """The label chosen for each tokenised review in ``texts``: shape ``(len(texts),)``, int64."""
        if isinstance(texts, str) or any(isinstance(text, str) for text in texts):
            raise TypeError("predict takes tokenised reviews (lists of words, as split_imdb returns them), "
                            "not strings: tokenize them first")
        return torch.as_tensor(self.model.predict(self.vectorizer.transform(texts)), dtype=torch.long)

    def accuracy(self, texts: Sequence[Sequence[str]], labels: Sequence[int]) -> float:
        """Fraction of tokenised ``texts`` classified as ``labels``."""
        return float(self.model.score(self.vectorizer.transform(texts), labels))


def train_tfidf(train: tuple[Sequence[Sequence[str]], Sequence[int]],
                val: tuple[Sequence[Sequence[str]], Sequence[int]], *,
                Cs: Sequence[float] = (1.0, 4.0, 16.0, 64.0, 256.0), min_df: int = 2) -> TfidfBaseline:
    """Fit TF-IDF (words and pairs seen in at least ``min_df`` training reviews) and a logistic
    regression for each inverse regularisation strength in ``Cs``; keep the best on ``val`` (chapter 7).

    Args:
        train, val: ``(tokenised reviews, labels)``, as :func:`companion.models.sentiment.split_imdb`
            returns them; the vocabulary and the weights come from ``train`` only.
        Cs: the values of ``C`` to try (larger: weaker regularisation).
        min_df: drop features seen in fewer training reviews.

    Returns:
        a :class:`TfidfBaseline`; ``seconds`` is the wall time of everything above.
    """
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
    except ImportError as error:
        raise ImportError("the TF-IDF baseline needs scikit-learn: pip install scikit-learn "
                          "(or the package's extra: pip install 'attention-course-companion[imdb]')") from error
    if not Cs or any(not isinstance(C, (int, float)) or isinstance(C, bool) or C <= 0 for C in Cs):
        raise ValueError(f"Cs must be a non-empty list of positive numbers, got {Cs!r}")
    start = time.perf_counter()
    vectorizer = TfidfVectorizer(analyzer=words_and_pairs, min_df=min_df, sublinear_tf=True)
    X_train = vectorizer.fit_transform(train[0])  # (reviews, features), sparse
    X_val = vectorizer.transform(val[0])
    tried, best = {}, None
    for C in Cs:
        model = LogisticRegression(C=C, max_iter=2000).fit(X_train, train[1])
        tried[C] = float(model.score(X_val, val[1]))
        if best is None or tried[C] > tried[best[0]]:
            best = (C, model)
    return TfidfBaseline(vectorizer, best[1], best[0], tried, time.perf_counter() - start)
