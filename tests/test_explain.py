"""Chapter 7's path split of the classifier's decision: exact, and each path what it says it is."""

import pytest
import torch

from companion import TransformerClassifier, count_bigrams, pad_batch
from companion.models.explain import logit_paths


def small_model(dtype=torch.float64, **kwargs):
    torch.manual_seed(0)
    keys = count_bigrams([[3, 4, 3, 4, 5, 3, 4]], 12, max_size=5, min_freq=2)
    config = dict(d_model=8, num_heads=2, num_layers=1, norm_first=True, pooling="mean", dropout=0.0,
                  pad_id=0, bigram_keys=keys) | kwargs
    model = TransformerClassifier(12, 2, **config).to(dtype).eval()
    with torch.no_grad():  # biases and LayerNorm affine away from their defaults, so each term counts
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(0.3 * torch.randn_like(p))
    return model


def batch():
    return pad_batch([[3, 4, 5, 0, 7, 3, 4], [2, 9], [11]], max_len=8)  # a real 0 in the first review


def test_the_paths_add_up_to_the_models_gap():
    model = small_model()
    tokens, keep = batch()
    paths = logit_paths(model, tokens, keep)
    logits = model(tokens, keep)[0]
    gap = logits[:, 1] - logits[:, 0]
    total = sum(paths.totals().values())
    torch.testing.assert_close(total, gap, atol=1e-12, rtol=1e-12)
    for part in (paths.direct, paths.attention, paths.feed_forward):
        assert part.shape == tokens.shape and bool((part[~keep[:, 0]] == 0).all())


def test_the_attention_path_credits_the_token_that_is_read():
    """The same number by loops over heads, readers and sources, from the layer's own parts."""
    model = small_model()
    tokens, keep = batch()
    paths = logit_paths(model, tokens, keep)
    layer, norm = model.encoder.layers[0], model.encoder.norm
    e, _ = model.embed(tokens, keep)
    h = layer.norm1(e)
    a, alpha = layer.self_attn(h, h, h, mask=keep, need_weights=True)
    total = e + a + layer.feed_forward(layer.norm2(e + a))
    w = model.head.weight[1] - model.head.weight[0]
    V = layer.self_attn.project(h, h, h)[2]
    d_k, heads = layer.self_attn.d_k, layer.self_attn.num_heads
    for b in range(tokens.shape[0]):
        real = keep[b, 0].nonzero().flatten().tolist()
        for s in range(tokens.shape[1]):
            expected = torch.zeros((), dtype=e.dtype)
            if s in real:
                for t in real:
                    sigma = (total[b, t].var(unbiased=False) + norm.eps).sqrt()
                    for i in range(heads):
                        part = torch.zeros_like(e[b, t])
                        part[i * d_k:(i + 1) * d_k] = V[b, s, i * d_k:(i + 1) * d_k]
                        moved = layer.self_attn.W_o.weight @ part  # what value s of head i adds, per unit weight
                        moved = moved - moved.mean()  # the final LayerNorm centres its input
                        expected += alpha[b, i, t, s] * (w * norm.weight) @ moved / sigma / len(real)
            torch.testing.assert_close(paths.attention[b, s], expected, atol=1e-12, rtol=1e-10)


def test_without_attention_and_feed_forward_only_the_direct_path_is_left():
    model = small_model()
    with torch.no_grad():
        model.encoder.layers[0].self_attn.W_o.weight.zero_()
        model.encoder.layers[0].self_attn.W_o.bias.zero_()
        for p in model.encoder.layers[0].feed_forward.parameters():
            p.zero_()
    tokens, keep = batch()
    paths = logit_paths(model, tokens, keep)
    assert bool((paths.attention == 0).all()) and bool((paths.feed_forward == 0).all())
    # then each token's share is the head applied to its own normalised embedding
    e, _ = model.embed(tokens, keep)
    x = model.encoder.norm(e)
    w = model.head.weight[1] - model.head.weight[0]
    n = keep[:, 0].sum(dim=1, keepdim=True)
    beta = w @ model.encoder.norm.bias
    expected = torch.where(keep[:, 0], (x @ w - beta) / n, 0)
    torch.testing.assert_close(paths.direct, expected, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("change, message", [
    (dict(pooling="max"), "pooling='max'"),
    (dict(num_layers=2), "2 layers"),
    (dict(norm_first=False), "norm_first=False"),
])
def test_other_models_are_refused_with_the_reason(change, message):
    with pytest.raises(ValueError, match=message):
        logit_paths(small_model(**change), *batch())


def test_training_mode_is_refused():
    with pytest.raises(ValueError, match="model.eval"):
        logit_paths(small_model().train(), *batch())
