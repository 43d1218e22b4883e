"""The chapter 7 model helpers: the validation carve, building, saving and loading."""

import torch

from companion import Vocab
from companion.data.imdb import Split
from companion.models.sentiment import CONFIGS, build_classifier, load_classifier, save_classifier, split_imdb


def fake_data(n=40):
    texts = [f"review number {i} is {'great' if i % 2 else 'awful'}" for i in range(n)]
    labels = [i % 2 for i in range(n)]
    return {"train": Split(texts, labels, [8 if y else 2 for y in labels]),
            "test": Split([t.upper() for t in texts], labels, [8 if y else 2 for y in labels])}


def test_validation_is_carved_from_train_balanced_disjoint_and_reproducible():
    data = fake_data()
    split = split_imdb(data, val_size=10, seed=3)
    train_texts = {" ".join(t) for t in split["train"][0]}
    val_texts = {" ".join(t) for t in split["val"][0]}
    assert len(split["val"][0]) == 10 and sum(split["val"][1]) == 5  # half of each class
    assert len(split["train"][0]) == 30 and not train_texts & val_texts
    assert len(split["test"][0]) == 40 and split["test"][0][0] == ["review", "number", "0", "is", "awful"]
    assert split_imdb(data, val_size=10, seed=3) == split
    assert split_imdb(data, val_size=10, seed=4)["val"] != split["val"]


def test_save_and_load_round_trip(tmp_path):
    vocab = Vocab.build([["good", "bad", "film"]])
    config = {**CONFIGS["keras"], "vocab": len(vocab)}
    torch.manual_seed(0)
    model = build_classifier(config, vocab).eval()
    save_classifier(tmp_path / "m.pt", model, vocab, config)
    loaded, loaded_vocab, loaded_config = load_classifier(tmp_path / "m.pt")
    tokens = torch.tensor([vocab.encode(["good", "film", "bad"])])
    torch.testing.assert_close(loaded(tokens)[0], model(tokens)[0])
    assert loaded_vocab.tokens == vocab.tokens and loaded_config == config
