"""Training and evaluating a sequence classifier (chapter 7)."""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from .._checks import check_choice
from ..data.text import pad_batch
from .train_loop import SCHEDULES, make_optimizer, optimizer_step, warmup_cosine

__all__ = ["History", "length_batches", "train_classifier", "predict", "accuracy_of", "loss_and_accuracy"]


@dataclass
class History:
    """What :func:`train_classifier` measured: per epoch, and (with ``eval_every``) within epochs.

    ``curve`` holds one dict per evaluation: ``step``, ``epoch`` (fractional), ``train_loss``
    (the mean over the steps since the last evaluation), ``val_loss`` and ``val_accuracy``.
    """

    train_loss: list[float] = field(default_factory=list)
    val_accuracy: list[float] = field(default_factory=list)
    epoch_seconds: list[float] = field(default_factory=list)
    best_epoch: int = -1
    curve: list[dict] = field(default_factory=list)


def length_batches(lengths: Sequence[int], batch_size: int, shuffle: bool, generator: torch.Generator | None = None):
    """Index batches of reviews of similar length (chapter 7): far less padding to compute on.

    Sorts by length, cuts into batches, and (with ``shuffle``) visits the batches in random order.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    chunks = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    if shuffle:
        order = torch.randperm(len(chunks), generator=generator, device=generator.device if generator else "cpu")
        chunks = [chunks[i] for i in order.tolist()]
    return chunks


def train_classifier(model: nn.Module, train: tuple[Sequence[Sequence[int]], Sequence[int]],
                     val: tuple[Sequence[Sequence[int]], Sequence[int]], *, epochs: int, batch_size: int = 32,
                     lr: float = 1e-3, weight_decay: float = 0.0, warmup_fraction: float = 0.0,
                     schedule: str = "constant", max_len: int = 256, truncate: str = "head", clip: float = 1.0,
                     device: torch.device | str = "cpu", seed: int = 0, progress: bool = True,
                     max_steps: int | None = None, eval_every: int | None = None) -> History:
    """Train ``model`` ((tokens, keep) -> ``(logits, weights)``) with AdamW and cross-entropy (chapter 7).

    ``train`` and ``val`` are ``(token id lists, labels)``. After every epoch the validation
    accuracy is measured; at the end the model holds the weights of its best epoch (early
    stopping chosen on validation data, never on test data). With ``eval_every``, validation
    loss and accuracy are also measured every ``eval_every`` steps, for a finer learning curve
    (``History.curve``); that only observes: the training itself is unchanged.

    Returns:
        the :class:`History` of losses, validation accuracies and epoch times.
    """
    check_choice("schedule", schedule, SCHEDULES)
    generator = torch.Generator().manual_seed(seed)
    model.to(device)
    # The fused kernel updates all parameters in one pass: on the course model it computes the
    # same step about 8x faster than the default implementation (benchmarks/optimizer.py).
    optimizer = make_optimizer(model, "adamw", lr, weight_decay, fused=True)
    texts, labels = train
    lengths = [min(len(t), max_len) for t in texts]
    steps_per_epoch = math.ceil(len(texts) / batch_size)
    total = epochs * steps_per_epoch if max_steps is None else min(max_steps, epochs * steps_per_epoch)
    warmup = int(warmup_fraction * total)
    if schedule == "constant" and warmup:
        raise ValueError(f'warmup_fraction={warmup_fraction} needs schedule="cosine" (a constant schedule has no '
                         f"warm-up)")
    history, best_state, step = History(), None, 0
    if eval_every is not None and (not isinstance(eval_every, int) or isinstance(eval_every, bool) or eval_every < 1):
        raise ValueError(f"eval_every must be a positive number of steps or None, got {eval_every!r}")
    since_eval: list[float] = []
    for epoch in range(epochs):
        model.train()
        start, losses = time.perf_counter(), []
        batches = length_batches(lengths, batch_size, shuffle=True, generator=generator)
        bar = tqdm(batches, desc=f"epoch {epoch + 1}/{epochs}", disable=not progress, mininterval=10)
        for index in bar:
            if step >= total:
                break
            tokens, keep = pad_batch([texts[i] for i in index], max_len, truncate=truncate)
            target = torch.tensor([labels[i] for i in index], device=device)
            if schedule == "cosine":
                for group in optimizer.param_groups:
                    group["lr"] = lr * warmup_cosine(step, total, warmup)
            logits, _ = model(tokens.to(device), keep.to(device))  # pad_batch's mask, not the ids
            loss = F.cross_entropy(logits, target)
            optimizer_step(model, optimizer, loss, clip)
            losses.append(loss.item())
            since_eval.append(losses[-1])
            step += 1
            if eval_every and step % eval_every == 0:
                val_loss, val_accuracy = loss_and_accuracy(model, val, batch_size=128, max_len=max_len,
                                                           truncate=truncate, device=device)
                history.curve.append(dict(step=step, epoch=step / steps_per_epoch, val_loss=val_loss,
                                          val_accuracy=val_accuracy,
                                          train_loss=sum(since_eval) / len(since_eval)))
                since_eval = []
                model.train()
            bar.set_postfix(loss=f"{sum(losses[-50:]) / len(losses[-50:]):.3f}", refresh=False)  # redraw on mininterval only
        history.epoch_seconds.append(time.perf_counter() - start)
        history.train_loss.append(sum(losses) / max(1, len(losses)))
        accuracy = accuracy_of(model, val, batch_size=128, max_len=max_len, truncate=truncate, device=device)
        history.val_accuracy.append(accuracy)
        if accuracy > max(history.val_accuracy[:-1], default=-1.0):
            history.best_epoch, best_state = epoch, copy.deepcopy(model.state_dict())
        if progress:
            print(f"epoch {epoch + 1}: train loss {history.train_loss[-1]:.4f}, val accuracy {accuracy:.4f}, "
                  f"{history.epoch_seconds[-1]:.0f} s")
        if step >= total:
            break
    if best_state is not None:
        model.load_state_dict(best_state)
    return history


@torch.no_grad()
def predict(model: nn.Module, texts: Sequence[Sequence[int]], *, batch_size: int = 128, max_len: int = 256,
            truncate: str = "head", device: torch.device | str = "cpu") -> torch.Tensor:
    """Class probabilities ``(n, num_classes)`` for token id lists, in their given order (chapter 7).

    ``model`` is called as ``model(tokens, keep)`` with :func:`companion.pad_batch`'s padded
    batch and mask, and returns ``(logits, weights)``, as :class:`companion.TransformerClassifier` does.
    """
    model.eval()
    lengths = [min(len(t), max_len) for t in texts]
    out = [None] * len(texts)
    for index in length_batches(lengths, batch_size, shuffle=False):
        tokens, keep = pad_batch([texts[i] for i in index], max_len, truncate=truncate)
        logits, _ = model(tokens.to(device), keep.to(device))
        for i, p in zip(index, torch.softmax(logits.float(), dim=-1).cpu()):
            out[i] = p
    return torch.stack(out)


def loss_and_accuracy(model, data, **kwargs) -> tuple[float, float]:
    """Mean cross-entropy (nats) and accuracy on ``(token id lists, labels)`` (chapter 7)."""
    texts, labels = data
    probabilities = predict(model, texts, **kwargs)
    target = torch.tensor(labels, device=probabilities.device)
    picked = probabilities[torch.arange(len(target), device=probabilities.device), target].clamp_min(1e-12)
    return -picked.log().mean().item(), (probabilities.argmax(dim=-1) == target).float().mean().item()


def accuracy_of(model, data, **kwargs) -> float:
    """Fraction of ``(token id lists, labels)`` classified correctly (chapter 7)."""
    texts, labels = data
    predicted = predict(model, texts, **kwargs).argmax(dim=-1)
    return (predicted == torch.tensor(labels, device=predicted.device)).float().mean().item()
