"""The chapter 7 model helpers: the validation carve, building, saving and loading."""

import re

import torch

from companion import Vocab
from companion.data.imdb import Split
from companion.models.sentiment import CONFIGS, build_classifier, load_classifier, save_classifier, split_imdb


def fake_data(n=40):
    texts = [f"review number {i} is {'great' if i % 2 else 'awful'}" for i in range(n)]
    labels = [i % 2 for i in range(n)]
    ratings = [7 + i % 4 if y else 1 + i % 4 for i, y in enumerate(labels)]  # 1-4 and 7-10, by review number
    return {"train": Split(texts, labels, ratings), "test": Split([t.upper() for t in texts], labels, ratings)}


def test_validation_is_carved_from_train_balanced_disjoint_and_reproducible():
    data = fake_data()
    split = split_imdb(data, val_size=10, seed=3)
    train_texts = {" ".join(t) for t in split["train"][0]}
    val_texts = {" ".join(t) for t in split["val"][0]}
    assert len(split["val"][0]) == 10 and sum(split["val"][1]) == 5  # half of each class
    assert len(split["train"][0]) == 30 and not train_texts & val_texts
    assert len(split["test"][0]) == 40 and split["test"][0][0] == ["review", "number", "0", "is", "awful"]
    for part in ("train", "val", "test"):  # each review's own rating, in the split's order
        numbers = [int(tokens[2]) for tokens in split[part][0]]
        assert split["ratings"][part] == [7 + i % 4 if i % 2 else 1 + i % 4 for i in numbers]
    assert len(split["ratings"]["train"]) == 30 and len(split["ratings"]["test"]) == 40
    assert split_imdb(data, val_size=10, seed=3) == split
    assert split_imdb(data, val_size=10, seed=4)["val"] != split["val"]


def test_save_and_load_round_trip(tmp_path):
    vocab = Vocab.build([["good", "bad", "film"]])
    config = {**CONFIGS["keras"], "vocab": len(vocab)}
    torch.manual_seed(0)
    model = build_classifier(config, vocab).eval()
    save_classifier(tmp_path / "m.pt", model, vocab, config)
    loaded, loaded_vocab, loaded_config = load_classifier(tmp_path / "m.pt", device=torch.get_default_device())
    tokens = torch.tensor([vocab.encode(["good", "film", "bad"])])
    torch.testing.assert_close(loaded(tokens)[0], model(tokens)[0])
    assert loaded_vocab.tokens == vocab.tokens and loaded_config == config


def test_results_file_round_trip_keeps_the_other_section(tmp_path):
    from companion.models.sentiment import load_results, save_results

    path = tmp_path / "results.json"
    save_results("benchmark", {"torch": "x"}, [{"name": "course", "test_accuracy": 0.9}], path)
    save_results("ablation", {"torch": "y"}, [{"label": "deeper", "test_accuracy": 0.8}], path)
    results = load_results(path)
    assert results["benchmark"]["rows"][0]["name"] == "course" and results["ablation"]["torch"] == "y"
    import pytest

    with pytest.raises(ValueError, match="section must be"):
        save_results("other", {}, [], path)
    with pytest.raises(FileNotFoundError, match="make bench-imdb"):
        load_results(tmp_path / "none.json")


def test_the_shipped_results_cover_every_config_and_ablation_row():
    """Chapter 7 quotes these: every config and every ablation row of benchmarks/imdb.py, full runs."""
    import importlib.util
    from pathlib import Path

    from companion.models.sentiment import RESULTS, load_results

    spec = importlib.util.spec_from_file_location("bench", Path(__file__).parents[1] / "benchmarks" / "imdb.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    results = load_results(RESULTS)
    assert [r["name"] for r in results["benchmark"]["rows"]] == bench.ALL
    assert [r["label"] for r in results["ablation"]["rows"]] == list(bench.ABLATIONS)
    assert [r["changes"] for r in results["ablation"]["rows"]] == list(bench.ABLATIONS.values())
    for section in results.values():
        assert section["quick"] is False
        for row in section["rows"]:
            assert 0.5 < row["test_accuracy"] < 1 and row["train_seconds"] > 0
    # measured with today's settings: a config changed since the run makes the results stale
    for row in results["benchmark"]["rows"]:
        if row["name"] in CONFIGS:
            assert row["config"] == CONFIGS[row["name"]] and row["seed"] == 0, f"{row['name']}: re-run make bench-imdb"
        assert row["date"] <= results["benchmark"]["date"]  # when the row was measured (--keep keeps older rows)
    import inspect

    from companion.models.bag_of_words import train_tfidf

    grid = list(inspect.signature(train_tfidf).parameters["Cs"].default)
    tfidf = next(row for row in results["benchmark"]["rows"] if row["name"] == "tfidf")
    assert tfidf["config"]["Cs"] == grid, "the TF-IDF grid changed: re-run benchmarks/imdb.py --configs tfidf --keep"
    # a label that says how many word pairs the table holds says what the run measured: the pair
    # table is the parameters beyond the words-only row's, one row of d_model per pair plus row 0
    words_only = next(r for r in results["ablation"]["rows"] if r["changes"] == {"bigrams": 0})
    for row in results["ablation"]["rows"]:
        named = re.match(r"all ([\d,]+) word pairs", row["label"])
        if named:
            pairs = (row["params"] - words_only["params"]) // row["config"]["d_model"] - 1
            assert pairs == int(named.group(1).replace(",", "")), f"{row['label']!r}: the table holds {pairs:,} pairs"
    for row in results["ablation"]["rows"]:
        changes = {k: v for k, v in row["changes"].items() if k != "seed"}
        assert row["config"] == {**CONFIGS["course"], **changes}, f"{row['label']}: re-run make bench-ablation"
        assert row["seed"] == row["changes"].get("seed", 0)
        assert row["date"] <= results["ablation"]["date"]  # when the row was measured (--only keeps older rows)
