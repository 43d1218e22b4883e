"""An attention-only Transformer: the model in which induction heads are found (chapter 11).

Token embeddings (plus learned positions, or none), then ``num_layers`` causal
:class:`companion.MultiHeadAttention` layers, each adding its output to the residual stream,
then a linear unembedding. No feed-forward network and no LayerNorm: the residual stream
is the embedding plus a sum of heads' outputs, so what a head reads is what earlier heads
wrote (Elhage et al., 2021, study such models)::

    x_0 = embed(ids)                        (batch, t, d_model)
    x_l = x_{l-1} + Attention_l(x_{l-1})    for l = 1 .. num_layers, causal
    logits = x_L W_U^T                      (batch, t, vocab)
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_positive_int, check_tokens
from ..data.repeated import repeated_tokens
from ..embedding import TokenEmbedding
from ..head_scores import induction_score, previous_token_score
from ..masks import causal_mask
from ..multihead import MultiHeadAttention
from .train_loop import fit

__all__ = ["AttentionOnlyLM", "repeat_losses", "train_on_repeats"]


class AttentionOnlyLM(nn.Module):
    """``num_layers`` causal attention layers over a token embedding, no MLPs, no norms (chapter 11).

    Args:
        vocab_size: number of token ids.
        d_model: width of the residual stream.
        num_heads: heads per layer; ``d_k = d_model // num_heads``.
        num_layers: attention layers.
        max_len: longest sequence accepted.
        positional: ``"learned"`` positions added to the tokens, or ``"none"``.

    Parameters: ``embedding`` (a :class:`companion.TokenEmbedding`), ``layers`` (a
    ``ModuleList`` of :class:`companion.MultiHeadAttention`) and ``unembed``
    (``Linear(d_model, vocab_size)``, no bias).
    """

    def __init__(self, vocab_size: int, d_model: int = 64, num_heads: int = 4, num_layers: int = 2,
                 max_len: int = 64, positional: str = "learned") -> None:
        super().__init__()
        check_positive_int("num_layers", num_layers)
        self.embedding = TokenEmbedding(vocab_size, d_model, max_len, positional=positional)
        self.layers = nn.ModuleList(MultiHeadAttention(d_model, num_heads, dropout=0.0)
                                    for _ in range(num_layers))
        self.unembed = nn.Linear(d_model, vocab_size, bias=False)
        self.num_heads = num_heads

    def forward(self, ids: torch.Tensor, need_weights: bool = False,
                head_masks: list[torch.Tensor | None] | None = None
                ) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
        """Next-token logits at every position.

        Args:
            ids: int64 ``(batch, t)``.
            need_weights: also return each layer's attention weights.
            head_masks: ``None``, or one entry per layer: ``None`` or a ``(num_heads,)`` float
                tensor multiplying each head's output (``0`` switches a head off, chapter 4).

        Returns:
            ``(logits, weights)``: logits ``(batch, t, vocab)``; weights ``None`` or a list of
            ``num_layers`` tensors ``(batch, num_heads, t, t)``.
        """
        check_tokens("ids", ids)
        if ids.dim() != 2:
            raise ValueError(f"ids must be (batch, t), got shape {tuple(ids.shape)}")
        if head_masks is not None and len(head_masks) != len(self.layers):
            raise ValueError(f"head_masks must hold one entry per layer ({len(self.layers)}), got {len(head_masks)}")
        x = self.embedding(ids)  # (batch, t, d_model): the residual stream
        mask = causal_mask(ids.size(1), device=ids.device)  # (t, t)
        all_weights = []
        for i, attention in enumerate(self.layers):
            head_mask = None if head_masks is None else head_masks[i]
            out, weights = attention(x, x, x, mask=mask, need_weights=need_weights, head_mask=head_mask)
            x = x + out  # each layer adds what its heads write
            all_weights.append(weights)
        return self.unembed(x), (all_weights if need_weights else None)


def _next_token_nll(model: AttentionOnlyLM, ids: torch.Tensor, head_masks=None) -> torch.Tensor:
    """Each next-token prediction's loss in nats: ``(batch, t - 1)`` for ids ``(batch, t)``."""
    logits, _ = model(ids[:, :-1], head_masks=head_masks)  # (batch, t - 1, vocab)
    return F.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")


def repeat_losses(model: AttentionOnlyLM, ids: torch.Tensor, copyable: torch.Tensor,
                  head_masks: list[torch.Tensor | None] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean loss, in bits per token, on the first half's predictions and on the copyable ones.

    Args:
        model: an :class:`AttentionOnlyLM`.
        ids: int64 ``(batch, 2 half)`` from :func:`companion.repeated_tokens`.
        copyable: its bool ``(batch, 2 half - 1)`` mask of copyable predictions.
        head_masks: passed to the model (switch heads off).

    Returns:
        ``(first, repeat)``: scalar tensors; ``first`` over the predictions of tokens ``1 ..
        half - 1`` (random: about ``log2(vocab)`` at best), ``repeat`` over ``copyable``.
    """
    _check_repeat("ids", ids, copyable)
    half = ids.size(1) // 2
    nll = _next_token_nll(model, ids, head_masks) / math.log(2)  # (batch, 2 half - 1), bits
    return nll[:, :half - 1].mean(), nll[copyable].mean()


def _check_repeat(name: str, ids, copyable) -> None:
    """Raise unless ``ids`` is a repeated batch (batch, 2 half), half >= 2, and ``copyable`` its mask."""
    check_tokens(name, ids)
    t = ids.size(1)
    if t < 4 or t % 2:
        raise ValueError(f"{name} must be (batch, 2 half) with half >= 2, a first half and its repeat (as "
                         f"repeated_tokens returns it), got shape {tuple(ids.shape)}")
    if not isinstance(copyable, torch.Tensor) or copyable.dtype != torch.bool \
            or tuple(copyable.shape) != (ids.size(0), t - 1):
        got = f"{copyable.dtype} {tuple(copyable.shape)}" if isinstance(copyable, torch.Tensor) else type(copyable).__name__
        raise ValueError(f"copyable must be the bool ({ids.size(0)}, {t - 1}) mask of copyable predictions that "
                         f"repeated_tokens returns beside the ids, got {got}")
    if not bool(copyable.any()):
        raise ValueError("copyable marks no prediction, so there is no copyable loss to measure")


def train_on_repeats(model: AttentionOnlyLM, *, steps: int, vocab_size: int, halves: tuple[int, int] = (8, 24),
                     batch_size: int = 32, lr: float = 1e-3, seed: int = 0, every: int = 50,
                     probe: tuple[torch.Tensor, torch.Tensor] | None = None, progress: bool = False) -> dict:
    """Train on repeated random tokens with :func:`companion.models.fit` (chapter 11).

    Each batch draws its ``half`` uniformly from ``halves`` (inclusive), so that where the
    repeat starts cannot be read off the positions: only a model that finds the earlier copy
    by its content can predict the second half. The loss is the mean over every prediction.

    Args:
        model: an :class:`AttentionOnlyLM` with ``max_len >= 2 * halves[1]``.
        steps, batch_size, lr, seed: the training (Adam, constant learning rate).
        vocab_size: the tokens are drawn from ``[0, vocab_size)``.
        halves: the shortest and longest half.
        every, probe: every ``every`` steps, measure the model on ``probe``, a fixed
            ``(ids, copyable)`` batch: the losses of :func:`repeat_losses` and each layer's
            previous-token and induction scores.
        progress: show a progress bar.

    Returns:
        a dict: ``"first"``, ``"repeat"``: each step's training loss in bits on the two parts;
        with ``probe``, also ``"probe_steps"``, ``"probe_first"``, ``"probe_repeat"`` and
        ``"previous"``, ``"induction"``: ``(probes, num_layers, num_heads)`` CPU tensors of scores.
    """
    if not isinstance(model, AttentionOnlyLM):
        raise TypeError(f"model must be an AttentionOnlyLM (it takes head_masks), got {type(model).__name__}")
    if not (isinstance(halves, (tuple, list)) and len(halves) == 2
            and all(isinstance(h, int) and not isinstance(h, bool) for h in halves)):
        raise TypeError(f"halves must be a pair of ints (shortest, longest half), got {halves!r}")
    low, high = halves
    if not 2 <= low <= high or 2 * high > model.embedding.max_len:
        raise ValueError(f"halves must be (low, high) with 2 <= low <= high (a half of 1 has nothing to copy) and "
                         f"2 * high <= max_len={model.embedding.max_len}, got {halves}")
    check_positive_int("vocab_size", vocab_size)
    if vocab_size > model.unembed.out_features:
        raise ValueError(f"vocab_size={vocab_size} is larger than the model's vocabulary "
                         f"({model.unembed.out_features}): the tokens are drawn from [0, vocab_size)")
    if probe is not None:
        if not (isinstance(probe, (tuple, list)) and len(probe) == 2):
            raise TypeError("probe must be the pair (ids, copyable) that repeated_tokens returns")
        _check_repeat("probe's ids", *probe)
    record = {"first": [], "repeat": []}

    def draw(generator):
        half = int(torch.randint(low, high + 1, (1,), generator=generator))
        return repeated_tokens(batch_size, half, vocab_size, generator)

    def loss(model, batch):
        ids, copyable = (x.to(next(model.parameters()).device) for x in batch)
        nll = _next_token_nll(model, ids)  # (batch, 2 half - 1), nats
        half = ids.size(1) // 2
        record["first"].append(nll[:, :half - 1].mean().item() / math.log(2))
        record["repeat"].append(nll[copyable].mean().item() / math.log(2))
        return nll.mean()

    probes = {"probe_steps": [], "probe_first": [], "probe_repeat": [], "previous": [], "induction": []}

    def measure(step):
        ids, copyable = (x.to(next(model.parameters()).device) for x in probe)  # the model's device
        first, repeat = repeat_losses(model, ids, copyable)
        _, weights = model(ids, need_weights=True)
        probes["probe_steps"].append(step)
        probes["probe_first"].append(first.item())
        probes["probe_repeat"].append(repeat.item())
        probes["previous"].append(torch.stack([previous_token_score(w) for w in weights]).cpu())
        probes["induction"].append(torch.stack([induction_score(w, ids.size(1) // 2) for w in weights]).cpu())

    if probe is not None:
        model.eval()
        with torch.no_grad():
            measure(0)
    fit(model, draw, loss, steps=steps, lr=lr, seed=seed, progress=progress, desc="repeated tokens",
        every=every if probe is not None else None, callback=measure if probe is not None else None)
    if probe is not None:
        record.update(probes)
        record["previous"], record["induction"] = torch.stack(probes["previous"]), torch.stack(probes["induction"])
    return record
