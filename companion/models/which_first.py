"""A small encoder that says which of two markers comes first, with a choice of positions (chapter 5).

Trained on :mod:`companion.data.which_first`. The same encoder is built with each way of
telling it where a token is, so that the chapter can compare them on equal terms::

    position="none"        x = embed(tokens)                                 no order at all
    position="sinusoidal"  x = embed(tokens) + PE[:t]      (combine="add")
                           x = [embed(tokens), PE[:t]]     (combine="concat": half the width each)
    position="learned"     the same with a trained table P[:t] in place of PE[:t]
    position="rotary"      x = embed(tokens); every self-attention rotates its queries and keys

then ``num_layers`` pre-norm :class:`companion.EncoderLayer` s, a final LayerNorm, the mean
over positions and a linear layer give two logits ``(B first, A first)``.
"""

from __future__ import annotations


import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_choice, check_positive_int, check_tokens
from ..data.which_first import which_first_batch
from ..layers import EncoderLayer
from ..positional import LearnedPositionalEmbedding, sinusoidal_encoding
from ..transformer import LayerStack
from .train_loop import fit

__all__ = ["POSITIONS", "WhichFirst", "train_which_first", "which_first_accuracy"]

POSITIONS = ("none", "sinusoidal", "learned", "rotary")


class WhichFirst(nn.Module):
    """A small encoder classifier for the which-comes-first task (chapter 5).

    Args:
        vocab_size: number of symbols (markers 0 and 1 included).
        position: ``"none"``, ``"sinusoidal"``, ``"learned"`` or ``"rotary"``.
        combine: ``"add"`` the position vectors to the token embeddings, or ``"concat"``
            them (token embedding and positions get ``d_model / 2`` features each); only for
            ``"sinusoidal"`` and ``"learned"``.
        d_model: the encoder's width.
        num_heads: attention heads per layer.
        num_layers: encoder layers.
        max_len: the learned table's number of rows (the longest sequence it accepts);
            the other encodings accept any length.
    """

    def __init__(
        self,
        vocab_size: int,
        position: str,
        combine: str = "add",
        d_model: int = 32,
        num_heads: int = 2,
        num_layers: int = 2,
        max_len: int = 64,
    ) -> None:
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("d_model", d_model), ("num_layers", num_layers),
                            ("max_len", max_len)):
            check_positive_int(name, value)
        check_choice("position", position, POSITIONS)
        check_choice("combine", combine, ("add", "concat"))
        if combine == "concat" and position not in ("sinusoidal", "learned"):
            raise ValueError(f'combine="concat" needs position vectors to concatenate ("sinusoidal" or "learned"), '
                             f"got position={position!r}")
        if combine == "concat" and d_model % 2:
            raise ValueError(f'combine="concat" splits d_model in two halves, so d_model must be even, got {d_model}')
        self.vocab_size, self.position, self.combine, self.max_len = vocab_size, position, combine, max_len
        d_pos = d_model // 2 if combine == "concat" else d_model  # width of the position vectors
        d_tok = d_model - d_pos if combine == "concat" else d_model  # width of the token embeddings
        self.d_model, self.d_pos = d_model, d_pos
        self.embed = nn.Embedding(vocab_size, d_tok)
        if position == "learned":
            self.table = LearnedPositionalEmbedding(max_len, d_pos)
        self.layers = LayerStack(EncoderLayer, num_layers, d_model, num_heads, d_ff=2 * d_model, dropout=0.0,
                                 norm_first=True, rotary=position == "rotary")
        self.norm = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, 2)

    def positions(self, t: int) -> torch.Tensor | None:
        """The position vectors ``(t, d_pos)`` added or concatenated, or ``None`` (none, rotary)."""
        if self.position == "sinusoidal":
            return sinusoidal_encoding(t, self.d_pos).to(self.embed.weight.device)  # (t, d_pos)
        if self.position == "learned":
            if t > self.max_len:
                raise ValueError(f"a learned position table has one row per position, and this one has "
                                 f"max_len={self.max_len} rows: it cannot encode a sequence of length {t}; "
                                 f"build the model with max_len >= {t} (rows past the training lengths stay untrained)")
            return self.table.embedding.weight[:t]  # (t, d_pos)
        return None

    def encode(self, tokens: torch.Tensor) -> torch.Tensor:
        """The first layer's input ``(batch, t, d_model)`` for int64 ``tokens`` ``(batch, t)``."""
        check_tokens("tokens", tokens)
        x = self.embed(tokens)  # (batch, t, d_tok)
        P = self.positions(tokens.size(1))  # (t, d_pos) or None
        if P is None:
            return x
        if self.combine == "add":
            return x + P  # (batch, t, d_model)
        return torch.cat([x, P.expand(tokens.size(0), -1, -1)], dim=-1)  # (batch, t, d_tok + d_pos)

    def forward(self, tokens: torch.Tensor, need_weights: bool = False):
        """Logits ``(batch, 2)`` for int64 ``tokens`` ``(batch, t)``: column 1 is "A comes first".

        With ``need_weights`` returns ``(logits, weights)``, weights a list with one
        ``(batch, num_heads, t, t)`` tensor per layer.
        """
        x = self.encode(tokens)  # (batch, t, d_model)
        x, weights = self.layers(x, norm=self.norm, need_weights=need_weights)
        logits = self.out(x.mean(dim=1))  # (batch, d_model) -> (batch, 2)
        return (logits, weights) if need_weights else logits


def train_which_first(
    model: WhichFirst,
    steps: int,
    lengths: tuple[int, int] = (4, 16),
    batch_size: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
    progress: bool = False,
) -> list[float]:
    """Train ``model`` with Adam on fresh batches, each of one length drawn from ``lengths`` (chapter 5).

    Args:
        model: a :class:`WhichFirst`.
        steps: optimiser steps.
        lengths: ``(shortest, longest)`` training length, both included.
        batch_size: examples per step.
        lr: Adam's peak learning rate (cosine decay to 0 over ``steps``).
        seed: seeds the batches and the lengths.
        progress: show a progress bar.

    Returns:
        the training loss of every step.
    """
    low, high = lengths
    if not (2 <= low <= high):
        raise ValueError(f"lengths must be (shortest, longest) with 2 <= shortest <= longest, got {lengths}")
    device = next(model.parameters()).device

    def draw(generator):  # one length per batch
        t = int(torch.randint(low, high + 1, (1,), generator=generator))
        return which_first_batch(batch_size, t, model.vocab_size, generator)

    def loss(model, batch):
        tokens, label = batch
        return F.cross_entropy(model(tokens.to(device)), label.to(device))

    return fit(model, draw, loss, steps=steps, lr=lr, schedule="cosine", seed=seed, progress=progress,
               desc=f"{model.position} ({model.combine})").loss


@torch.no_grad()
def which_first_accuracy(model: WhichFirst, t: int, n: int = 2000, seed: int = 1) -> float:
    """The fraction of ``n`` fresh length-``t`` examples whose label ``model`` predicts (chapter 5)."""
    model.eval()
    device = next(model.parameters()).device
    tokens, label = which_first_batch(n, t, model.vocab_size, torch.Generator().manual_seed(seed))
    return (model(tokens.to(device)).argmax(-1).cpu() == label).float().mean().item()
