"""What an exercise is, and the comparison its checks use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch


class Mismatch(AssertionError):
    """A check found a wrong answer; the message says the case, expected vs got, and a hint."""


@dataclass(frozen=True)
class Exercise:
    """One graded exercise.

    Attributes:
        id: stable id, e.g. ``"ch01-softargmax"``; notebook cells carry it in their metadata.
        title: a few words for tables.
        function: the name the learner's cell defines.
        checks: functions ``check(fn)`` that raise :class:`Mismatch` on a wrong answer.
        solution: the reference solution (the book shows its source).
    """

    id: str
    title: str
    function: str
    checks: tuple[Callable, ...] = field(repr=False)
    solution: Callable = field(repr=False)


def _fmt(x) -> str:
    """Values for a message: small tensors in full, larger ones by their first row."""
    if not isinstance(x, torch.Tensor):
        return repr(x)
    values, prefix = x.detach().double(), ""
    if values.numel() > 12:
        values, prefix = values.reshape(-1, values.shape[-1])[0], "first row "
    return f"{prefix}{values.numpy().round(4).tolist()}"


def expect_close(got, expected: torch.Tensor, case: str, hint: str, atol: float = 1e-5) -> None:
    """Raise :class:`Mismatch` unless ``got`` is a tensor of ``expected``'s shape and values."""
    if not isinstance(got, torch.Tensor):
        raise Mismatch(f"{case}: expected a torch.Tensor, got {type(got).__name__}. Hint: {hint}")
    if got.shape != expected.shape:
        raise Mismatch(
            f"{case}: expected shape {tuple(expected.shape)}, got shape {tuple(got.shape)}. Hint: {hint}"
        )
    if not torch.allclose(got.detach().to(expected.dtype), expected, atol=atol, rtol=1e-4, equal_nan=False):
        raise Mismatch(f"{case}: expected {_fmt(expected)}, got {_fmt(got)}. Hint: {hint}")


def expect_equal(got, expected: torch.Tensor, case: str, hint: str) -> None:
    """Raise :class:`Mismatch` unless ``got`` equals ``expected`` exactly: dtype, shape and values."""
    if not isinstance(got, torch.Tensor):
        raise Mismatch(f"{case}: expected a torch.Tensor, got {type(got).__name__}. Hint: {hint}")
    if got.dtype != expected.dtype:
        raise Mismatch(f"{case}: expected dtype {expected.dtype}, got {got.dtype}. Hint: {hint}")
    if got.shape != expected.shape:
        raise Mismatch(f"{case}: expected shape {tuple(expected.shape)}, got shape {tuple(got.shape)}. Hint: {hint}")
    if not torch.equal(got, expected):
        raise Mismatch(f"{case}: expected {expected.tolist()}, got {got.tolist()}. Hint: {hint}")
