"""Encoder-decoder Transformer and the classifier."""

import pytest
import torch

from companion import Transformer, TransformerClassifier


@pytest.mark.parametrize("pooling", ["max", "mean", "cls"])
def test_classifier_ignores_padding(pooling):
    """Adding padding to a review changes nothing: not attention, not pooling."""
    torch.manual_seed(0)
    model = TransformerClassifier(30, 2, d_model=16, num_heads=2, pooling=pooling, pad_id=0, dropout=0.0).eval()
    tokens = torch.randint(1, 30, (2, 6))
    padded = torch.cat([tokens, torch.zeros(2, 4, dtype=torch.long)], dim=1)
    torch.testing.assert_close(model(padded)[0], model(tokens)[0])


def test_mean_and_max_pooling_by_hand():
    model = TransformerClassifier(10, 2, d_model=4, num_heads=1, pooling="mean")
    x = torch.tensor([[[1.0, 2, 3, 4], [3, 2, 1, 0], [100, 100, 100, 100]]])  # last position is padding
    keep = torch.tensor([[[True, True, False]]])
    assert model.pool(x, keep).tolist() == [[2.0, 2.0, 2.0, 2.0]]
    model.pooling = "max"
    assert model.pool(x, keep).tolist() == [[3.0, 2.0, 3.0, 4.0]]


def test_classifier_returns_weights_per_layer_and_cls_position():
    model = TransformerClassifier(30, 3, d_model=16, num_heads=4, num_layers=2, pooling="cls")
    logits, weights = model(torch.randint(1, 30, (5, 7)), need_weights=True)
    assert logits.shape == (5, 3)
    assert len(weights) == 2 and weights[0].shape == (5, 4, 8, 8)  # 1 + 7 positions with [CLS]


def test_classifier_learns_a_toy_task():
    """Label = does token 7 occur? Solvable only by looking at the right token: loss must fall."""
    torch.manual_seed(0)
    model = TransformerClassifier(20, 2, d_model=16, num_heads=2, dropout=0.0, pooling="max")
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    tokens = torch.randint(1, 20, (256, 10))
    tokens[tokens == 7] = 8
    labels = torch.randint(0, 2, (256,))
    tokens[labels == 1, torch.randint(0, 10, (int(labels.sum()),))] = 7
    for _ in range(60):
        logits, _ = model(tokens)
        loss = torch.nn.functional.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert (model(tokens)[0].argmax(-1) == labels).float().mean() > 0.95


def test_transformer_decoder_is_causal():
    torch.manual_seed(0)
    model = Transformer(20, 25, d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=2, dropout=0.0)
    src, tgt = torch.randint(0, 20, (2, 6)), torch.randint(0, 25, (2, 5))
    logits, weights = model(src, tgt, need_weights=True)
    assert logits.shape == (2, 5, 25)
    changed = tgt.clone()
    changed[:, 3:] = (changed[:, 3:] + 1) % 25
    logits2, _ = model(src, changed)
    torch.testing.assert_close(logits[:, :3], logits2[:, :3])
    for layer in weights["decoder"]:
        assert (layer["self"].triu(1) == 0).all()
        assert layer["cross"].shape == (2, 2, 5, 6)


def test_transformer_source_padding_is_ignored():
    torch.manual_seed(0)
    model = Transformer(20, 25, d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=1,
                        dropout=0.0, src_pad_id=0)
    src, tgt = torch.randint(1, 20, (1, 4)), torch.randint(0, 25, (1, 3))
    padded = torch.cat([src, torch.zeros(1, 3, dtype=torch.long)], dim=1)
    keep = (padded != 0).unsqueeze(1)
    torch.testing.assert_close(model(padded, tgt, src_mask=keep)[0], model(src, tgt)[0])
