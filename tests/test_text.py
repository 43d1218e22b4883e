"""Tokenisation, vocabulary, padding and the training loop (chapter 7)."""

import pytest
import torch

from companion import TransformerClassifier, Vocab, pad_batch, tokenize
from companion.models.training import accuracy_of, length_batches, predict, train_classifier


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
    with pytest.raises(ValueError, match="truncate must be one of 'head', 'head_tail', got 'tail'"):
        pad_batch([[1]], max_len=4, truncate="tail")


def test_length_batches_cover_everything_once_and_group_similar_lengths():
    lengths = [5, 1, 9, 2, 8, 3, 7]
    batches = length_batches(lengths, batch_size=3, shuffle=True, generator=torch.Generator().manual_seed(0))
    assert sorted(i for b in batches for i in b) == list(range(7))
    assert all(max(lengths[i] for i in b) - min(lengths[i] for i in b) <= 4 for b in batches)


def test_training_learns_a_toy_sentiment_task_and_keeps_the_best_epoch():
    g = torch.Generator().manual_seed(0)
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
    torch.testing.assert_close(probabilities.sum(-1), torch.ones(5))
