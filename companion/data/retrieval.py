"""A synthetic retrieval task where attention must be sharp (chapter 3).

Each example holds ``t`` random keys and a query that is a rotated, noisy copy of one of
them, the *target*. A model must learn which rotation links queries to keys and put (nearly)
all of its attention on the target, among ``t - 1`` distractors.
"""

from __future__ import annotations

import torch

from .._checks import check_positive_int

__all__ = ["random_rotation", "retrieval_batch"]


def random_rotation(d: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """A random orthogonal matrix ``(d, d)``: the hidden link between queries and keys (chapter 3).

    Args:
        d: the width of queries and keys.
        generator: for reproducible draws.

    Returns:
        ``R`` of shape ``(d, d)`` with ``R @ R.T`` equal to the identity.
    """
    check_positive_int("d", d)
    Q, R = torch.linalg.qr(torch.randn(d, d, generator=generator))
    return Q * torch.sign(torch.diagonal(R))  # the signs make the draw uniform over rotations


def retrieval_batch(
    n: int,
    t: int,
    rotation: torch.Tensor,
    noise: float = 0.5,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Draw ``n`` examples of the retrieval task (chapter 3).

    Keys have independent standard normal components; the query of an example is
    ``keys[target] @ rotation + noise * (standard normal)``.

    Args:
        n: number of examples.
        t: keys per example (the target and ``t - 1`` distractors), at least 2.
        rotation: ``(d, d)``, from :func:`random_rotation`.
        noise: standard deviation of the noise added to each query component, >= 0.
        generator: for reproducible draws.

    Returns:
        ``(query, keys, target)``: query ``(n, d)``, keys ``(n, t, d)``, target int64 ``(n,)``
        (the index of the matching key).
    """
    check_positive_int("n", n)
    check_positive_int("t", t)
    if t < 2:
        raise ValueError(f"t must be at least 2 (a target and a distractor), got t={t}")
    if not isinstance(rotation, torch.Tensor) or rotation.dim() != 2 or rotation.size(0) != rotation.size(1):
        raise ValueError(f"rotation must be a square (d, d) tensor, got {getattr(rotation, 'shape', type(rotation))}")
    if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not noise >= 0:
        raise ValueError(f"noise must be a number >= 0, got {noise!r}")
    d = rotation.size(0)
    keys = torch.randn(n, t, d, generator=generator)  # (n, t, d)
    target = torch.randint(t, (n,), generator=generator)  # (n,)
    query = keys[torch.arange(n), target] @ rotation  # (n, d): the target, rotated
    query = query + noise * torch.randn(n, d, generator=generator)
    return query, keys, target
