"""Choosing the next token from a language model's logits (chapter 8).

The model gives a score (a logit) per vocabulary entry. Turning scores into a choice is
chapter 1's soft attention again, now over the vocabulary: ``softmax(beta * logits)`` with
the inverse temperature ``beta = 1 / temperature``::

    p(v) = exp(logit_v / T) / sum_u exp(logit_u / T)

- ``T -> 0`` is hard attention: all the probability on the best token (greedy decoding);
- ``T = 1`` is the model's own distribution;
- ``T -> infinity`` is uniform over the vocabulary.

Top-k sampling first keeps only the ``k`` highest logits, so a long tail of unlikely
tokens cannot be drawn. Nucleus (top-p) sampling keeps the fewest most likely tokens whose
probabilities add up to at least ``p``: the number kept follows the model's certainty (one
token where the model is sure, dozens where it is not), where top-k keeps ``k`` everywhere.
"""

from __future__ import annotations

import math

import numpy as np

import torch

from ._checks import check_positive_int, check_tensor, describe
from .attention import hardargmax, softargmax

__all__ = ["next_token_probs", "sample_next_token"]


def _check_logits(logits: torch.Tensor) -> None:
    """Logits that give no distribution: an empty vocabulary, NaN, +inf, or a row with no finite logit.

    The values are read on the CPU only: on a GPU reading them would make every generated token
    wait for the device, so there they are not checked (the shape still is).
    """
    if logits.size(-1) == 0:
        raise ValueError(f"logits has an empty vocabulary (shape {tuple(logits.shape)}): there is no token to choose")
    if logits.device.type != "cpu":
        return
    if torch.isnan(logits).any():
        raise ValueError("logits hold NaN: the model's output is broken (a NaN has no rank and no probability); "
                         "check the model's inputs and weights")
    if torch.isposinf(logits).any():
        raise ValueError("logits hold +inf: a logit must be finite, or -inf for a token that may not be chosen")
    if bool((logits == float("-inf")).all(dim=-1).any()):
        row = int((logits == float("-inf")).all(dim=-1).nonzero()[0])
        raise ValueError(f"row {row} of logits is all -inf: every token is masked out, there is none to choose")


def next_token_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                     top_p: float | None = None) -> torch.Tensor:
    """The distribution the next token is drawn from (chapter 8).

    Args:
        logits: ``(batch, vocab)``, the scores of the next token.
        temperature: ``T >= 0``; the logits are divided by it (``beta = 1 / T`` of
            chapter 1). ``0`` puts all the probability on the highest logit (the first one
            on a tie), which is greedy decoding.
        top_k: keep the ``k`` highest logits of each row and give the rest probability 0;
            a logit tied with the ``k``-th highest is kept too. ``None`` keeps all.
        top_p: ``0 < p <= 1``; after the temperature and top-k, keep the fewest most likely
            tokens whose probabilities add up to at least ``p`` (the nucleus; a token tied
            with the least likely one kept is kept too), give the rest probability 0 and
            renormalise. The most likely token is always kept. ``None`` (or ``1``) keeps all.

    Returns:
        ``(batch, vocab)`` probabilities, each row summing to 1.

    Raises:
        ValueError: an empty vocabulary; on the CPU also NaN or +inf logits, or a row that is
        all -inf (on a GPU these values are not read, to spare a wait per token).
    """
    check_tensor("logits", logits, ndim=2, shape_doc="(batch, vocab)")
    _check_logits(logits)
    if isinstance(temperature, (bool, np.bool_)) or not isinstance(temperature, (int, float, np.integer, np.floating)):
        raise TypeError(f"temperature must be a number >= 0 (0 = greedy, 1 = the model's own distribution), "
                        f"got {describe(temperature)}")
    temperature = float(temperature)  # a NumPy scalar is a number too
    if not (math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be a finite number >= 0 (0 = greedy, 1 = the model's own "
                         f"distribution), got {temperature!r}")
    if top_p is not None and (isinstance(top_p, bool) or not isinstance(top_p, (int, float))
                              or not 0 < top_p <= 1):
        raise ValueError(f"top_p must be a number with 0 < top_p <= 1 (the probability the kept tokens must "
                         f"reach; 1 keeps all), got {top_p!r}")
    if top_k is not None:
        check_positive_int("top_k", top_k)
        if top_k < logits.size(-1):
            kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (batch, 1): the k-th highest logit
            logits = logits.masked_fill(logits < kth, float("-inf"))
    if temperature == 0:
        probs = hardargmax(logits)  # one-hot of the highest logit
    elif math.isfinite(1.0 / temperature):
        probs = softargmax(logits, beta=1.0 / temperature)  # softmax(logits / T)
    else:
        # T so small that beta = 1 / T overflows (T = 1e-310): softmax(logits / T) is then the
        # uniform distribution over the highest logits (exp((s - max s) / T) is 1 there, 0 elsewhere)
        top = (logits == logits.amax(dim=-1, keepdim=True)).to(logits.dtype)  # (batch, vocab)
        probs = top / top.sum(dim=-1, keepdim=True)
    if top_p is None or top_p == 1:
        return probs
    return _nucleus(probs, top_p)


def _nucleus(probs: torch.Tensor, p: float) -> torch.Tensor:
    """Keep the fewest most likely tokens whose probabilities reach ``p`` (top-p sampling).

    Args:
        probs: ``(batch, vocab)`` probabilities, each row summing to 1.
        p: ``0 < p <= 1``.

    Returns:
        ``(batch, vocab)``: ``probs`` with every token outside the nucleus set to 0, each row
        renormalised to sum to 1. A token as likely as the least likely one kept is kept too.
    """
    sorted_probs = probs.sort(dim=-1, descending=True).values  # (batch, vocab), most likely first
    before = sorted_probs.cumsum(dim=-1) - sorted_probs  # (batch, vocab): mass of the likelier ones
    # the i-th most likely token is needed while the likelier ones have not reached p yet
    needed = (before < p).sum(dim=-1, keepdim=True)  # (batch, 1), at least 1 (before[0] = 0 < p)
    cutoff = sorted_probs.gather(-1, needed - 1)  # (batch, 1): the least likely token kept
    kept = probs.masked_fill(probs < cutoff, 0.0)  # (batch, vocab)
    return kept / kept.sum(dim=-1, keepdim=True)


def sample_next_token(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                      top_p: float | None = None, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw one next token per row from :func:`next_token_probs` (chapter 8).

    Args:
        logits: ``(batch, vocab)``.
        temperature: as in :func:`next_token_probs`; ``0`` takes the argmax without drawing.
        top_k, top_p: as in :func:`next_token_probs`.
        generator: the random generator to draw from (seeded, the samples repeat).

    Returns:
        int64 ``(batch,)``, the chosen token ids.
    """
    probs = next_token_probs(logits, temperature, top_k, top_p)  # (batch, vocab)
    if temperature == 0:
        return probs.argmax(dim=-1)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator (seeded, e.g. torch.Generator().manual_seed(0)) or "
                        f"None, got {describe(generator)}")
    if generator is not None and generator.device.type != probs.device.type:
        raise ValueError(f"generator is on {generator.device.type} but logits are on {probs.device}: sample with "
                         f"a generator on the logits' device, torch.Generator(device={str(probs.device)!r})")
    return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(1)  # (batch,)
