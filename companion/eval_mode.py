"""Evaluation mode for a block of code, with the caller's mode restored after it (chapters 6 and 8)."""

from __future__ import annotations

from contextlib import contextmanager

from torch import nn

__all__ = ["evaluating"]


@contextmanager
def evaluating(model: nn.Module):
    """Run the block with ``model.eval()``; restore the model's training mode after it, also
    when the block raises (a caught error must not leave dropout off for later training)."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)
