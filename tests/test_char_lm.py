"""Chapter 8's split and the stored race: what the chapter reads must describe the chapter's model."""

import pytest
import torch

from companion.data.imdb import Split
from companion.models.char_lm import LM_CONFIG, LM_TRAINING, load_lm_results, split_reviews


def fake_imdb(n=500):
    texts = [f"review {i}: a film<br />with {'great' if i % 2 else 'dull'} acting, {i * 7 % 13} stars" for i in range(n)]
    return {"train": Split(texts, [i % 2 for i in range(n)], [1 + i % 10 for i in range(n)])}


def test_the_split_is_seeded_disjoint_and_in_the_stated_sizes():
    data = fake_imdb()
    vocab, reviews, train_ids, valid_ids, test_ids = split_reviews(data, quick=True)
    again = split_reviews(data, quick=True)
    assert all(torch.equal(a, b) for a, b in zip((train_ids, valid_ids, test_ids), again[2:]))
    assert sorted(reviews) == sorted(data["train"].texts)  # a permutation
    order = torch.randperm(500, generator=torch.Generator().manual_seed(0)).tolist()
    assert reviews == [data["train"].texts[i] for i in order]
    # 200 training reviews, then the last 200 held out: 100 validation, 100 test; one line each
    assert vocab.decode(train_ids).count("\n") == 199 and vocab.decode(test_ids).count("\n") == 99
    assert "<br />" not in vocab.decode(train_ids)
    held = set(reviews[-200:])
    assert not held & set(reviews[:200])


def test_the_stored_results_describe_the_chapters_model():
    """Change LM_CONFIG or LM_TRAINING and this fails until make bench-lm has been re-run."""
    results = load_lm_results()
    race = results["race"]
    assert race["config"] == LM_CONFIG and race["training"] == LM_TRAINING
    assert [row["seed"] for row in race["transformer"]] == [0, 1]
    assert all(row["steps"] == LM_TRAINING["steps"] for row in race["transformer"])
    assert race["best_ngram"]["bits"] == pytest.approx(min(min(r["add-k"], r["kneser-ney"])
                                                          for r in race["ngrams"].values()))
    long = results["long"]
    assert long["config"] == LM_CONFIG and long["training"] | {"steps": LM_TRAINING["steps"]} == LM_TRAINING
    assert long["training"]["steps"] > LM_TRAINING["steps"]
    positions = results["positions"]
    assert positions["config"] == LM_CONFIG
    assert set(positions["runs"]) == {"learned", "learned, at the tokens' scale", "sinusoidal"}
