"""The smallest attention model that must attend sharply, with and without 1/sqrt(d_k) (chapter 3).

Its scores are one head's attention scores, ``scale * (query W_q) . (key_j W_k)``; trained with
cross-entropy on the target's index, the softmax of the scores is the attention that must
land on the target key. Three ways to scale:

- ``"sqrt"``: multiply the scores by ``1 / sqrt(d_k)``, as the Transformer does;
- ``"none"``: no scale;
- ``"folded"``: no scale, but ``W_q`` starts ``sqrt(d_k)`` times smaller, which gives the
  same scores as ``"sqrt"`` at initialisation (some models fold the scale into the
  initialisation instead of applying it).

The weights start with independent components of variance ``1 / d_model``, so projected keys
have unit-variance components at initialisation and projected queries ``1 + noise**2`` (1.25 at
:func:`companion.retrieval_batch`'s default noise of 0.5): close to the assumption of chapter 3's
theorem.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_positive_int
from ..data.retrieval import retrieval_batch
from .train_loop import fit

__all__ = ["SCALINGS", "Retriever", "train_retriever"]

SCALINGS = ("sqrt", "none", "folded")


class Retriever(nn.Module):
    """Attention scores of one query over ``t`` keys (chapter 3).

    Args:
        d_model: the width of queries and keys as given.
        d_k: the width of the projected queries and keys.
        scaling: ``"sqrt"``, ``"none"`` or ``"folded"`` (see the module's docstring).
    """

    def __init__(self, d_model: int, d_k: int, scaling: str = "sqrt") -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_k", d_k)
        if scaling not in SCALINGS:
            raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
        self.d_k, self.scaling = d_k, scaling
        self.W_q = nn.Linear(d_model, d_k, bias=False)
        self.W_k = nn.Linear(d_model, d_k, bias=False)
        with torch.no_grad():
            for linear in (self.W_q, self.W_k):  # unit-variance inputs give unit-variance projections
                linear.weight.normal_(0.0, 1.0 / math.sqrt(d_model))
            if scaling == "folded":
                self.W_q.weight /= math.sqrt(d_k)
        self.scale = 1.0 / math.sqrt(d_k) if scaling == "sqrt" else 1.0

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """Scores of each query against its keys.

        Args:
            query: ``(n, d_model)``.
            keys: ``(n, t, d_model)``.

        Returns:
            scores ``(n, t)``; their softmax over ``t`` is the attention.
        """
        q = self.W_q(query)  # (n, d_k)
        k = self.W_k(keys)  # (n, t, d_k)
        return self.scale * (k @ q.unsqueeze(-1)).squeeze(-1)  # (n, t)

    def extra_repr(self) -> str:
        return f"d_k={self.d_k}, scaling={self.scaling!r}"


def train_retriever(
    model: Retriever,
    rotation: torch.Tensor,
    steps: int,
    optimizer: str = "adam",
    lr: float = 1e-3,
    t: int = 16,
    batch_size: int = 64,
    noise: float = 0.5,
    seed: int = 0,
    test_size: int = 2000,
    progress: bool = False,
) -> dict:
    """Train ``model`` on fresh retrieval batches and measure it (chapter 3).

    Args:
        model: a :class:`Retriever`.
        rotation: the task's ``(d, d)`` rotation (:func:`companion.data.retrieval.random_rotation`).
        steps: number of optimiser steps, each on a fresh batch.
        optimizer: ``"adam"`` or ``"sgd"``.
        lr: learning rate.
        t, batch_size, noise: the task (see :func:`companion.data.retrieval.retrieval_batch`).
        seed: seeds the training batches; the test set uses ``seed + 1``.
        test_size: examples in the test set.
        progress: show a progress bar.

    Returns:
        ``{"loss": [training loss per step], "test_loss": float, "test_accuracy": float}``;
        a loss that became NaN or infinite stays so in the curve (training diverged).
    """
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    log = fit(model, draw=lambda g: retrieval_batch(batch_size, t, rotation, noise, g),
              loss=lambda model, batch: F.cross_entropy(model(*batch[:2]), batch[2]),
              steps=steps, optimizer=optimizer, lr=lr, seed=seed, progress=progress,
              desc=f"{model.scaling}, d_k={model.d_k}")
    losses = log.loss
    query, keys, target = retrieval_batch(test_size, t, rotation, noise, torch.Generator().manual_seed(seed + 1))
    model.eval()
    with torch.no_grad():
        scores = model(query, keys)
        return {"loss": losses, "test_loss": F.cross_entropy(scores, target).item(),
                "test_accuracy": (scores.argmax(-1) == target).float().mean().item()}
