"""The smallest model that shows heads specialising: one multi-head attention layer (chapter 4).

Trained on :mod:`companion.data.two_relations`, where every position must read its left
neighbour and the marked token at once. A token's input is the sum of three embeddings (its
symbol, whether it is marked, its position); one :class:`companion.MultiHeadAttention`
layer with a residual connection, then a position-wise two-layer network, give the logits::

    e = embed(x) + embed(marked) + embed(position)        (batch, t, d_model)
    h = e + MultiHead(e, e, e)                             (batch, t, d_model)
    logits = W_2 relu(W_1 h)                               (batch, t, vocab_size)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_positive_int
from ..data.two_relations import IGNORE, two_relations_batch
from ..multihead import MultiHeadAttention
from .train_loop import fit

__all__ = ["TwoRelations", "train_two_relations", "two_relations_accuracy"]


class TwoRelations(nn.Module):
    """One multi-head attention layer and a small feed-forward head (chapter 4).

    Args:
        vocab_size: number of symbols.
        max_len: the longest sequence (one learned position embedding per position).
        d_model: the total width, split over the heads.
        num_heads: number of heads; must divide ``d_model`` (unless ``wide``).
        wide: full-width heads (:class:`companion.MultiHeadAttention` ``wide=True``).
    """

    def __init__(self, vocab_size: int, max_len: int, d_model: int, num_heads: int, wide: bool = False) -> None:
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("max_len", max_len)):
            check_positive_int(name, value)
        self.vocab_size, self.max_len = vocab_size, max_len
        self.symbol = nn.Embedding(vocab_size, d_model)
        self.mark = nn.Embedding(2, d_model)
        self.position = nn.Embedding(max_len, d_model)
        self.attention = MultiHeadAttention(d_model, num_heads, wide=wide)
        self.head = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.ReLU(), nn.Linear(4 * d_model, vocab_size))

    def embed(self, tokens: torch.Tensor, marked: torch.Tensor) -> torch.Tensor:
        """The attention layer's input: symbol + mark + position embeddings.

        Args:
            tokens: int64 ``(batch, t)``, ``t <= max_len``.
            marked: bool ``(batch, t)``.

        Returns:
            ``(batch, t, d_model)``.
        """
        t = tokens.size(-1)
        if tokens.shape != marked.shape or tokens.dim() != 2:
            raise ValueError(f"tokens and marked must both be (batch, t), got {tuple(tokens.shape)} "
                             f"and {tuple(marked.shape)}")
        if t > self.max_len:
            raise ValueError(f"sequences of length {t} are longer than max_len={self.max_len}; "
                             f"build the model with max_len >= {t}")
        return self.symbol(tokens) + self.mark(marked.long()) + self.position.weight[:t]  # (batch, t, d_model)

    def forward(
        self,
        tokens: torch.Tensor,
        marked: torch.Tensor,
        need_weights: bool = False,
        head_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits for every position.

        Args:
            tokens: int64 ``(batch, t)``, ``t <= max_len``.
            marked: bool ``(batch, t)``.
            need_weights: also return the per-head attention weights.
            head_mask: optional ``(num_heads,)`` factors on the heads' outputs
                (see :meth:`companion.MultiHeadAttention.forward`); 0 removes a head.

        Returns:
            ``(logits, weights)``: logits ``(batch, t, vocab_size)``; weights
            ``(batch, num_heads, t, t)`` or ``None``.
        """
        e = self.embed(tokens, marked)  # (batch, t, d_model)
        a, weights = self.attention(e, e, e, need_weights=need_weights, head_mask=head_mask)
        return self.head(e + a), weights  # (batch, t, vocab_size)


def train_two_relations(
    model: TwoRelations,
    steps: int,
    t: int = 12,
    batch_size: int = 128,
    lr: float = 3e-3,
    seed: int = 0,
    progress: bool = False,
) -> list[float]:
    """Train ``model`` with Adam on fresh batches of the task (chapter 4).

    Args:
        model: a :class:`TwoRelations`.
        steps: optimiser steps, each on a fresh batch.
        t, batch_size: the training sequences' length and number per step.
        lr: Adam's learning rate.
        seed: seeds the batches.
        progress: show a progress bar.

    Returns:
        the training loss of every step (cross-entropy over positions 1 .. t - 1).
    """
    device = next(model.parameters()).device
    heads = model.attention.num_heads

    def loss(model, batch):
        tokens, marked, target = (x.to(device) for x in batch)
        logits, _ = model(tokens, marked)  # (batch, t, vocab_size)
        return F.cross_entropy(logits.flatten(0, 1), target.flatten(), ignore_index=IGNORE)

    return fit(model, draw=lambda g: two_relations_batch(batch_size, t, model.vocab_size, g), loss=loss,
               steps=steps, lr=lr, seed=seed, progress=progress, desc=f"{heads} head{'s' * (heads > 1)}").loss


@torch.no_grad()
def two_relations_accuracy(
    model: TwoRelations,
    tokens: torch.Tensor,
    marked: torch.Tensor,
    target: torch.Tensor,
    head_mask: torch.Tensor | None = None,
) -> float:
    """The fraction of positions ``i >= 1`` whose most likely symbol is the target (chapter 4).

    Args:
        model: a :class:`TwoRelations`.
        tokens, marked, target: ``(batch, t)`` each, from
            :func:`companion.data.two_relations.two_relations_batch`.
        head_mask: optional ``(num_heads,)``; 0 removes a head (ablation).
    """
    model.eval()
    device = next(model.parameters()).device
    if head_mask is not None:
        head_mask = head_mask.to(device)
    logits, _ = model(tokens.to(device), marked.to(device), head_mask=head_mask)
    scored = target.to(device) != IGNORE
    return (logits.argmax(-1) == target.to(device))[scored].float().mean().item()
