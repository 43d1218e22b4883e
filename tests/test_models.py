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


@pytest.mark.parametrize("pooling", ["max", "mean", "cls"])
def test_classifier_follows_the_callers_mask_not_the_ids(pooling):
    """With pad_batch's mask, a real token whose id is pad_id counts, and padding of any id does not."""
    from companion import pad_batch

    torch.manual_seed(0)
    model = TransformerClassifier(30, 2, d_model=16, num_heads=2, pooling=pooling, pad_id=0, dropout=0.0).eval()
    real = [[5, 0, 7], [4, 9]]  # the first review has a real token with id 0
    tokens, keep = pad_batch(real, max_len=8)  # keep (2, 1, 3)
    by_mask = model(tokens, keep)[0]
    by_ids = model(tokens)[0]  # takes the real 0 for padding
    assert not torch.allclose(by_mask[0], by_ids[0])
    torch.testing.assert_close(by_mask[1], by_ids[1])
    # each review alone, unpadded and with every position kept, gives the same logits
    for i, ids in enumerate(real):
        alone = torch.tensor([ids])
        torch.testing.assert_close(model(alone, torch.ones_like(alone, dtype=torch.bool))[0][0], by_mask[i])
    # whatever id the padding has, it is ignored; a (batch, t) mask works as well as (batch, 1, t)
    other = tokens.masked_fill(~keep[:, 0], 13)
    torch.testing.assert_close(model(other, keep[:, 0])[0], by_mask)


def test_classifier_rejects_a_mask_that_does_not_fit():
    model = TransformerClassifier(30, 2, d_model=16, num_heads=2, pooling="mean", pad_id=0)
    tokens = torch.randint(1, 30, (2, 5))
    with pytest.raises(TypeError, match="keep must be a bool tensor"):
        model(tokens, torch.ones(2, 1, 5))
    with pytest.raises(ValueError, match=r"keep must be \(batch, 1, t\) or \(batch, t\) for tokens \(2, 5\)"):
        model(tokens, torch.ones(2, 1, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="entirely padding"):
        model(tokens, torch.tensor([[True] * 5, [False] * 5]))


def test_a_classifier_with_no_layers_is_embeddings_pooling_and_head():
    """The ablation's "no attention" row: 0 layers leaves the (normalised) embeddings to pool."""
    torch.manual_seed(0)
    model = TransformerClassifier(30, 2, d_model=8, num_heads=2, num_layers=0, norm_first=True,
                                  pooling="mean", dropout=0.0).eval()
    tokens = torch.randint(1, 30, (3, 6))
    x = model.encoder.norm(model.encoder.embed(tokens))  # (3, 6, 8)
    torch.testing.assert_close(model(tokens)[0], model.head(x.mean(dim=1)))
    assert model(tokens, need_weights=True)[1] == []
    with pytest.raises(ValueError, match="num_layers must be an int >= 0, got -1"):
        TransformerClassifier(30, 2, num_layers=-1)


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
