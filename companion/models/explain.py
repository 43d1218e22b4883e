"""Where a mean-pooled classifier's decision comes from, path by path (chapter 7).

For a one-layer pre-norm :class:`~companion.TransformerClassifier` with mean pooling, the
logit gap ``logit_1 - logit_0`` of a review is an exact sum. With ``e_t`` the input to the
layer at position ``t`` (word, bigram and position embeddings), ``a_t`` the attention block's
output and ``f_t`` the feed-forward block's, the final vector is
``x_t = LayerNorm(e_t + a_t + f_t)``. Holding each position's LayerNorm scale ``sigma_t`` as
computed, ``LayerNorm`` is linear in its input, and with ``u = (w_1 - w_0) * gamma`` centred
(``u~ = u - mean(u)``) the gap is

    gap = (1/n) sum_t u~ . (e_t + a_t + f_t) / sigma_t  +  (w_1 - w_0) . beta  +  b_1 - b_0.

The attention block's output is ``a_t = sum_h W_o^h sum_s alpha^h_ts V^h_s + b_o``, so its
term is credited to the token ``s`` whose value is read, weighted by how much every real
position ``t`` attends to it. Four parts result, summing to the gap exactly:

* ``direct``: token ``t``'s own embedding, straight to the head (no other token involved);
* ``attention``: what token ``s`` sends to the positions that attend to it;
* ``feed_forward``: the feed-forward block at position ``t`` (a nonlinear function of the
  token and what attention brought it, so it cannot be split further into tokens exactly);
* ``constant``: biases no token owns (the head's, the output projection's, LayerNorm's beta).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .classifier import TransformerClassifier

__all__ = ["LogitPaths", "logit_paths"]


@dataclass
class LogitPaths:
    """Each review's logit gap split exactly into per-token shares along three paths (chapter 7).

    Attributes:
        direct: ``(batch, t)``, token ``t``'s own embedding; 0 at padding.
        attention: ``(batch, t)``, what token ``t`` sends through attention; 0 at padding.
        feed_forward: ``(batch, t)``, the feed-forward block at position ``t``; 0 at padding.
        constant: ``(batch,)``, the biases no token owns.
        gap: ``(batch,)``, the model's ``logit_1 - logit_0``; equal to the sum of all the above.
    """

    direct: torch.Tensor
    attention: torch.Tensor
    feed_forward: torch.Tensor
    constant: torch.Tensor
    gap: torch.Tensor

    def totals(self) -> dict[str, torch.Tensor]:
        """Each path's sum per review, ``(batch,)`` each, in the order of the attributes."""
        return {"direct": self.direct.sum(dim=1), "attention": self.attention.sum(dim=1),
                "feed_forward": self.feed_forward.sum(dim=1), "constant": self.constant}


@torch.no_grad()
def logit_paths(model: TransformerClassifier, tokens: torch.Tensor, keep: torch.Tensor | None = None) -> LogitPaths:
    """Split a one-layer, pre-norm, mean-pooling classifier's logit gap into paths (chapter 7).

    Args:
        model: a :class:`~companion.TransformerClassifier` with ``num_layers=1``,
            ``norm_first=True``, ``pooling="mean"`` and two classes, in eval mode.
        tokens, keep: as for :meth:`~companion.TransformerClassifier.forward`.

    Returns:
        a :class:`LogitPaths`, checked against the model's own forward pass.

    Raises:
        ValueError: a model of another shape (the split above holds for this one only), or
            one in training mode (dropout would change the decision at random).
    """
    layers, norm = model.encoder.layers, model.encoder.norm
    if model.pooling != "mean" or len(layers) != 1 or norm is None or model.head.out_features != 2:
        raise ValueError(
            "logit_paths splits the decision of a one-layer, pre-norm (norm_first=True), mean-pooling, "
            f"two-class classifier; got pooling={model.pooling!r}, {len(layers)} layers, "
            f"norm_first={norm is not None}, {model.head.out_features} classes")
    if model.training:
        raise ValueError("call model.eval() first: in training mode dropout changes the decision at random")
    layer, attn = layers[0], layers[0].self_attn
    e, keep = model.embed(tokens, keep)  # (batch, t, d), (batch, 1, t)
    h = layer.norm1(e)  # (batch, t, d)
    a, alpha = attn(h, h, h, mask=keep, need_weights=True)  # (batch, t, d), (batch, H, t, t)
    f = layer.feed_forward(layer.norm2(e + a))  # (batch, t, d)
    total = e + a + f  # (batch, t, d): what the final LayerNorm reads
    sigma = (total.var(dim=-1, unbiased=False) + norm.eps).sqrt()  # (batch, t)
    w = model.head.weight[1] - model.head.weight[0]  # (d,)
    u = w * norm.weight  # (d,)
    u = u - u.mean()  # centring is linear: u . (z - mean(z)) = (u - mean(u)) . z
    real = keep[:, 0].to(e.dtype)  # (batch, t): 1 at real tokens
    n = real.sum(dim=1, keepdim=True)  # (batch, 1)
    scale = real / sigma / n  # (batch, t): each real position's weight in the mean, over its sigma

    direct = (e @ u) * scale  # (batch, t)
    feed_forward = (f @ u) * scale  # (batch, t)
    _, _, V = attn.project(h, h, h)  # (batch, t, d)
    V = attn.split_heads(V)  # (batch, H, t, d_k)
    u_o = attn.split_heads((u @ attn.W_o.weight)[None, None])[0, :, 0]  # (d,) -> (H, d_k): u~ W_o, head by head
    sent = torch.einsum("bhsk,hk->bhs", V, u_o)  # (batch, H, t): what value s adds to the gap, per unit of attention
    read = torch.einsum("bhts,bt->bhs", alpha, scale)  # (batch, H, t): attention s receives, over real t
    attention = (sent * read).sum(dim=1) * real  # (batch, t)
    out_bias = 0.0 if attn.W_o.bias is None else attn.W_o.bias @ u  # () : b_o reaches every position
    beta = 0.0 if norm.bias is None else w @ norm.bias
    constant = out_bias * scale.sum(dim=1) + beta + model.head.bias[1] - model.head.bias[0]  # (batch,)

    logits, _ = model(tokens, keep)  # (batch, 2)
    gap = logits[:, 1] - logits[:, 0]
    parts = direct.sum(1) + attention.sum(1) + feed_forward.sum(1) + constant
    if not torch.allclose(parts, gap, atol=1e-4 * max(1.0, gap.abs().max().item())):
        raise RuntimeError(f"the paths add up to {parts.tolist()} but the model's gap is {gap.tolist()}: "
                           "the model is not the one this split describes")
    return LogitPaths(direct, attention, feed_forward, constant, gap)
