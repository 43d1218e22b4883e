"""The course's one training loop (chapters 3 to 8).

Every model of the course trains the same way: draw a batch, compute a loss, take an
optimiser step, with an optional warm-up + cosine learning-rate schedule, gradient
clipping and a progress bar. The models differ only in how a batch is drawn and how its
loss is computed, so those two are what a caller passes::

    log = fit(model, draw=lambda g: task_batch(64, g),
              loss=lambda model, batch: F.cross_entropy(model(batch.x), batch.y),
              steps=1000, lr=1e-3, schedule="cosine", warmup=100, clip=1.0)

:func:`optimizer_step` is the step itself, shared with :func:`companion.models.train_classifier`,
which keeps its epochs and early stopping around it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn
from tqdm import tqdm

from .._checks import check_choice, check_positive_int

__all__ = ["FitLog", "fit", "make_optimizer", "optimizer_step", "warmup_cosine"]

OPTIMIZERS = ("adam", "adamw", "sgd")
SCHEDULES = ("cosine", "constant")


def warmup_cosine(step: int, steps: int, warmup: int = 0) -> float:
    """The learning-rate factor at ``step`` (0-based) of ``steps``: a linear warm-up, then cosine
    (chapters 5 to 8).

    The factor rises linearly over the first ``warmup`` steps (``1/warmup, 2/warmup, ..., 1``),
    then decays from 1 to 0 along half a cosine over the remaining ``steps - warmup`` steps.
    ``warmup=0`` is the plain cosine decay ``(1 + cos(pi * step / steps)) / 2``; a warm-up
    longer than the run (a shortened run, e.g. a notebook's quick mode) rises the whole time.
    """
    check_positive_int("steps", steps)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a number of steps, 0 or more, got {warmup!r}")
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


def make_optimizer(model: nn.Module, name: str = "adam", lr: float = 1e-3, weight_decay: float = 0.0,
                   fused: bool = False) -> torch.optim.Optimizer:
    """``"adam"``, ``"adamw"`` or ``"sgd"`` over ``model``'s parameters.

    ``fused=True`` asks for PyTorch's fused Adam/AdamW kernel where it exists (CPU and CUDA,
    floating-point parameters): the same update, computed in one pass over all parameters.
    """
    check_choice("optimizer", name, OPTIMIZERS)
    if name == "sgd":
        return torch.optim.SGD(model.parameters(), lr=lr, weight_decay=weight_decay)
    device = next(model.parameters()).device
    fused = fused and device.type in ("cpu", "cuda") and all(p.is_floating_point() for p in model.parameters())
    make = torch.optim.AdamW if name == "adamw" else torch.optim.Adam
    return make(model.parameters(), lr=lr, weight_decay=weight_decay, **({"fused": True} if fused else {}))


def optimizer_step(model: nn.Module, optimizer: torch.optim.Optimizer, loss: torch.Tensor,
                   clip: float | None = None) -> None:
    """Back-propagate ``loss`` and update: zero the gradients, backward, clip their norm, step."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()


@dataclass
class FitLog:
    """What :func:`fit` records: each step's loss and the seconds since the start (chapters 3 to 8)."""

    loss: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def fit(
    model: nn.Module,
    draw: Callable[[torch.Generator], Any],
    loss: Callable[[nn.Module, Any], torch.Tensor],
    *,
    steps: int,
    optimizer: str = "adam",
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    schedule: str = "constant",
    warmup: int = 0,
    clip: float | None = None,
    seed: int = 0,
    progress: bool = False,
    desc: str = "training",
    leave: bool = False,
    every: int | None = None,
    callback: Callable[[int], None] | None = None,
) -> FitLog:
    """Train ``model`` for ``steps`` optimiser steps, each on a fresh batch (chapters 3 to 8).

    Args:
        model: any module; its parameters' device is the device of training (the ``loss``
            callable moves each batch there).
        draw: ``draw(generator)`` returns the next batch, drawing its randomness from
            ``generator`` (seeded with ``seed``: the same seed gives the same batches).
        loss: ``loss(model, batch)`` returns the scalar loss to minimise.
        steps: number of optimiser steps.
        optimizer: ``"adam"``, ``"adamw"`` or ``"sgd"``.
        lr: the (peak) learning rate.
        weight_decay: the optimiser's weight decay.
        schedule: ``"constant"``, or ``"cosine"``: :func:`warmup_cosine` with ``warmup``.
        warmup: steps of linear warm-up (``"cosine"`` only); 0 for none.
        clip: the largest gradient norm (``torch.nn.utils.clip_grad_norm_``); ``None``: no clipping.
        seed: seeds ``draw``'s generator.
        progress: show a progress bar with the running loss.
        desc: the progress bar's label.
        leave: keep the finished progress bar on the page (one long training); by default it
            disappears (many short ones).
        every, callback: call ``callback(steps_done)`` after every ``every`` steps (and after
            the last), in evaluation mode and without gradients, to measure the model along
            the way; its time is left out of ``seconds``.

    Returns:
        a :class:`FitLog`: every step's loss (a loss that became NaN or infinite stays so:
        training diverged) and the wall-clock seconds since the start. The model is left in
        evaluation mode.
    """
    check_positive_int("steps", steps)
    if (every is None) != (callback is None):
        raise ValueError(f"every and callback go together: got every={every!r} and callback={callback!r}")
    if every is not None:
        check_positive_int("every", every)
    check_choice("schedule", schedule, SCHEDULES)
    if schedule == "constant" and warmup:
        raise ValueError(f'warmup={warmup} needs schedule="cosine" (a constant schedule has no warm-up)')
    if schedule == "cosine":
        warmup_cosine(0, steps, warmup)  # checks warmup
    generator = torch.Generator().manual_seed(seed)
    opt = make_optimizer(model, optimizer, lr, weight_decay)
    log = FitLog()
    model.train()
    start, paused = time.perf_counter(), 0.0  # paused: seconds spent in the callback
    bar = tqdm(range(steps), disable=not progress, desc=desc, leave=leave, mininterval=2)
    for step in bar:
        if schedule == "cosine":
            for group in opt.param_groups:
                group["lr"] = lr * warmup_cosine(step, steps, warmup)
        batch = draw(generator)
        value = loss(model, batch)
        optimizer_step(model, opt, value, clip)
        log.loss.append(value.item())
        log.seconds.append(time.perf_counter() - start - paused)
        bar.set_postfix(loss=f"{log.loss[-1]:.3f}", refresh=False)
        if callback is not None and ((step + 1) % every == 0 or step + 1 == steps):
            pause = time.perf_counter()
            model.eval()
            with torch.no_grad():
                callback(step + 1)
            model.train()
            paused += time.perf_counter() - pause
    model.eval()
    return log
