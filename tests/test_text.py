"""Tokenisation, vocabulary, padding and the training loop (chapter 7)."""

import math

import pytest
import torch

from companion import TransformerClassifier, Vocab, pad_batch, tokenize
from companion.models.training import accuracy_of, length_batches, loss_and_accuracy, predict, train_classifier


def test_tokenize_keeps_words_apostrophes_and_marks():
    assert tokenize("Don't watch it!<br /><br />Worst film, EVER?") == ["don't", "watch", "it", "!", "worst", "film", "ever", "?"]


def test_vocab_from_training_tokens_only_with_stable_ties():
    vocab = Vocab.build([["b", "a", "c"], ["a", "b"], ["z"]], max_size=4)
    assert vocab.tokens == ["<pad>", "<unk>", "a", "b"]  # a and b seen twice; ties alphabetical
    assert vocab.encode(["a", "never-seen", "b"]) == [2, 1, 3]
    assert vocab.decode([3, 2]) == ["b", "a"]
    assert Vocab.from_json(vocab.to_json()).tokens == vocab.tokens
    assert Vocab.build([["x", "x", "y"]], min_freq=2).tokens == ["<pad>", "<unk>", "x"]


def test_vocab_rejects_bad_input():
    with pytest.raises(ValueError, match="starts with '<pad>' and '<unk>'"):
        Vocab(["a", "b"])
    with pytest.raises(ValueError, match="max_size must leave room"):
        Vocab.build([["a"]], max_size=2)


def test_pad_batch_truncates_pads_and_masks():
    tokens, keep = pad_batch([[5, 6, 7, 8, 9], [3]], max_len=4)
    assert tokens.tolist() == [[5, 6, 7, 8], [3, 0, 0, 0]]
    assert keep.shape == (2, 1, 4) and keep[:, 0].tolist() == [[True] * 4, [True, False, False, False]]
    tokens, _ = pad_batch([[1, 2, 3, 4, 5, 6, 7]], max_len=4, truncate="head_tail")
    assert tokens.tolist() == [[1, 2, 6, 7]]
    tokens, _ = pad_batch([[1, 2, 3, 4, 5, 6, 7]], max_len=3, truncate="head_tail")
    assert tokens.tolist() == [[1, 2, 7]]
    with pytest.raises(ValueError, match="an empty sequence"):
        pad_batch([[1], []], max_len=4)
    tokens, _ = pad_batch([[1, 2, 3, 4, 5, 6, 7], [8, 9]], max_len=3, truncate="tail")
    assert tokens.tolist() == [[5, 6, 7], [8, 9, 0]]  # the last max_len ids, as Keras' pad_sequences keeps
    with pytest.raises(ValueError, match="truncate must be one of 'head', 'tail', 'head_tail', got 'middle'"):
        pad_batch([[1]], max_len=4, truncate="middle")


def test_length_batches_cover_everything_once_and_group_similar_lengths():
    lengths = [5, 1, 9, 2, 8, 3, 7]
    batches = length_batches(lengths, batch_size=3, shuffle=True, generator=torch.Generator(torch.get_default_device()).manual_seed(0))
    assert sorted(i for b in batches for i in b) == list(range(7))
    assert all(max(lengths[i] for i in b) - min(lengths[i] for i in b) <= 4 for b in batches)


def test_training_learns_a_toy_sentiment_task_and_keeps_the_best_epoch():
    g = torch.Generator(torch.get_default_device()).manual_seed(0)
    texts, labels = [], []
    for _ in range(400):  # id 2 = "good", 3 = "bad", the rest neutral words
        y = int(torch.randint(0, 2, (1,), generator=g))
        words = torch.randint(4, 30, (int(torch.randint(3, 12, (1,), generator=g)),), generator=g).tolist()
        words.insert(int(torch.randint(0, len(words), (1,), generator=g)), 2 if y else 3)
        texts.append(words)
        labels.append(y)
    torch.manual_seed(0)
    model = TransformerClassifier(30, 2, d_model=16, num_heads=2, dropout=0.0, pooling="max")
    history = train_classifier(model, (texts[:300], labels[:300]), (texts[300:], labels[300:]), epochs=4,
                               batch_size=16, lr=1e-2, max_len=16, progress=False)
    assert len(history.val_accuracy) == 4 and history.val_accuracy[history.best_epoch] == max(history.val_accuracy)
    assert accuracy_of(model, (texts[300:], labels[300:]), max_len=16) == max(history.val_accuracy) > 0.95
    probabilities = predict(model, texts[:5], max_len=16)
    assert probabilities.shape == (5, 2)
    torch.testing.assert_close(probabilities.sum(-1), torch.ones(5, device="cpu"))  # predict returns CPU tensors


def _toy_task(n=200, seed=0):
    g = torch.Generator(torch.get_default_device()).manual_seed(seed)
    texts, labels = [], []
    for _ in range(n):
        y = int(torch.randint(0, 2, (1,), generator=g))
        words = torch.randint(4, 30, (int(torch.randint(3, 12, (1,), generator=g)),), generator=g).tolist()
        words.insert(int(torch.randint(0, len(words), (1,), generator=g)), 2 if y else 3)
        texts.append(words)
        labels.append(y)
    return (texts[: n * 3 // 4], labels[: n * 3 // 4]), (texts[n * 3 // 4 :], labels[n * 3 // 4 :])


def _train(eval_every):
    train, val = _toy_task()
    torch.manual_seed(0)
    model = TransformerClassifier(30, 2, d_model=16, num_heads=2, dropout=0.1, pooling="mean")
    history = train_classifier(model, train, val, epochs=2, batch_size=16, lr=1e-2, max_len=16, progress=False,
                               eval_every=eval_every)
    return model, history


def test_the_finer_learning_curve_only_observes():
    plain, plain_history = _train(None)
    observed, history = _train(5)
    assert plain_history.curve == [] and plain_history.val_accuracy == history.val_accuracy
    for a, b in zip(plain.state_dict().values(), observed.state_dict().values()):
        assert torch.equal(a, b)  # evaluating on the way changed nothing
    steps = [point["step"] for point in history.curve]
    assert steps == list(range(5, 20 + 1, 5))  # 150 reviews / 16 = 10 steps per epoch, 2 epochs
    assert history.curve[-1]["epoch"] == 2.0
    assert all(0 <= p["val_accuracy"] <= 1 and p["val_loss"] > 0 and p["train_loss"] > 0 for p in history.curve)
    # the last point is measured after the last step, on the final weights (the best epoch's here or not)
    assert history.curve[-1]["val_accuracy"] == history.val_accuracy[-1]
    with pytest.raises(ValueError, match="eval_every must be a positive number of steps"):
        train_classifier(observed, *_toy_task(), epochs=1, eval_every=0, progress=False)


def test_loss_and_accuracy_by_hand():
    class Fixed(torch.nn.Module):  # logits that give P(positive) = 0.8 for every review
        def forward(self, tokens, keep):  # the contract: (tokens, pad_batch's mask)
            logits = torch.tensor([[0.0, math.log(4.0)]]).expand(len(tokens), 2)
            return logits, None

    loss, accuracy = loss_and_accuracy(Fixed(), ([[1, 2], [3]], [1, 0]), max_len=4)
    assert accuracy == 0.5
    assert abs(loss - (-(math.log(0.8) + math.log(0.2)) / 2)) < 1e-6


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (the course's CI has none; run on one with "
                    "python -m pytest tests/test_text.py -k gpu)")
def test_training_and_prediction_on_a_gpu(tmp_path):
    """Chapter 7 on a GPU runtime (Colab): CPU data, the model on cuda, results back on the CPU."""
    train, val = _toy_task()
    torch.manual_seed(0)
    model = TransformerClassifier(30, 2, d_model=16, num_heads=2, dropout=0.1, pooling="mean")
    history = train_classifier(model, train, val, epochs=3, batch_size=16, lr=1e-2, max_len=16, progress=False,
                               device="cuda", eval_every=5)
    assert next(model.parameters()).is_cuda and history.val_accuracy[-1] > 0.9
    probabilities = predict(model, val[0], max_len=16, device="cuda")
    assert probabilities.device.type == "cpu" and probabilities.shape == (len(val[0]), 2)
    on_cpu = predict(model.cpu(), val[0], max_len=16, device="cpu")
    torch.testing.assert_close(probabilities, on_cpu, atol=1e-4, rtol=1e-4)  # same weights, other device
    loss, accuracy = loss_and_accuracy(model.cuda(), val, max_len=16, device="cuda")
    assert accuracy == accuracy_of(model, val, max_len=16, device="cuda") and loss > 0
