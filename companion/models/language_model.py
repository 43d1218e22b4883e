"""A generative (decoder-only) Transformer: the next-token language model of chapter 8.

Read top to bottom, the model is three lines of chapter 5 and 6 blocks::

    x = TokenEmbedding(ids)                          # ids * sqrt(d_model) + positions
    x = EncoderLayer(x, mask=causal_mask(t))  x L     # a GPT block = encoder layer + causal mask
    logits = Linear(LayerNorm(x))                    # (batch, t, vocab): a guess per position

The logits at position ``i`` score the token at ``i + 1``: with the causal mask, position
``i`` sees tokens ``0 .. i`` only, so one forward pass over ``t`` tokens makes ``t``
predictions and none of them can peek at its answer. Generation (:func:`generate`) feeds the
model its own samples, with a :class:`companion.KVCache` per layer so that each step computes
only the new token.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_flags, check_positive_int, check_tokens
from ..data.chars import random_windows
from ..embedding import TokenEmbedding
from ..eval_mode import evaluating
from ..kv_cache import KVCache, MemoryCache
from ..layers import EncoderLayer, make_norm
from ..masks import causal_mask
from ..sampling import sample_next_token
from ..transformer import LayerStack
from .train_loop import fit

__all__ = ["TransformerLM", "generate", "train_language_model", "evaluate_bits_per_char"]


class TransformerLM(nn.Module):
    """A decoder-only Transformer that predicts the next token (chapter 8).

    Args:
        vocab_size: number of token ids (characters, in chapter 8).
        d_model: width of the token representations.
        num_heads: attention heads per layer.
        num_layers: number of blocks.
        d_ff: hidden width of the feed-forward blocks; default ``4 * d_model``.
        max_len: the longest context, prompt and generated tokens together.
        dropout: dropout in the embeddings and the blocks (training mode only).
        positional: ``"learned"`` (GPT's choice), ``"sinusoidal"``, or ``"none"`` (with
            ``rotary``, positions enter the attention only).
        norm, activation, bias, rotary, num_kv_heads, attention: the blocks'
            (:class:`companion.EncoderLayer`);
            the final norm is of the same kind, and the output projection has a bias
            only with ``bias``.

    The blocks (``blocks``, a :class:`companion.LayerStack`) are pre-norm
    :class:`companion.EncoderLayer` s, so a final norm comes before the output projection
    (chapter 6 explains why pre-norm trains more easily). The defaults build the 2017 block
    with GPT's learned positions; chapter 8 passes ``positional="sinusoidal"`` and its own
    sizes. ``norm="rms", activation="swiglu", bias=False, rotary=True, positional="none"``
    builds Llama's block (chapter 10).
    """

    def __init__(self, vocab_size: int, d_model: int = 128, num_heads: int = 4, num_layers: int = 4,
                 d_ff: int | None = None, max_len: int = 256, dropout: float = 0.0,
                 positional: str = "learned", *, norm: str = "layer", activation: str = "relu",
                 bias: bool = True, rotary: bool = False, num_kv_heads: int | None = None,
                 attention: str = "softmax") -> None:
        super().__init__()
        check_positive_int("num_layers", num_layers)
        self.vocab_size, self.max_len, self.num_layers = vocab_size, max_len, num_layers
        self.embedding = TokenEmbedding(vocab_size, d_model, max_len, positional=positional, dropout=dropout)
        self.blocks = LayerStack(EncoderLayer, num_layers, d_model, num_heads, d_ff=d_ff, dropout=dropout,
                                 norm_first=True, activation=activation, bias=bias, rotary=rotary, norm=norm,
                                 num_kv_heads=num_kv_heads, attention=attention)
        self.norm = make_norm(norm, d_model, bias=bias)  # the stack's final norm (pre-norm blocks)
        self.head = nn.Linear(d_model, vocab_size, bias=bias)

    def new_caches(self) -> list[KVCache]:
        """One empty :class:`companion.KVCache` per block, for :meth:`forward`'s ``caches``, each
        allocated for the model's ``max_len`` positions."""
        return [KVCache(self.max_len) for _ in self.blocks]

    def forward(self, ids: torch.Tensor, caches: list[KVCache] | None = None,
                need_weights: bool = False, *,
                check_range: bool = True) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
        """Next-token logits at every position.

        Args:
            ids: int64 ``(batch, t)``, the tokens (without a cache: the whole sequence; with
                one: only the positions not cached yet).
            caches: ``None``, or one :class:`companion.KVCache` per block (from
                :meth:`new_caches`); the new positions attend to the cached ones and are
                appended to them.
            need_weights: also return each block's attention weights.
            check_range: check that every id is in ``[0, vocab_size)`` (a read from the device);
                :func:`generate` skips it for the tokens it sampled itself.

        Returns:
            ``(logits, weights)``: logits ``(batch, t, vocab)``, where position ``i`` scores
            the token that follows it; weights ``None`` or a list of ``num_layers`` tensors
            ``(batch, num_heads, t, t_k)``, ``t_k`` counting the cached positions.
        """
        check_tokens("ids", ids)
        if ids.dim() != 2 or ids.size(1) == 0:
            raise ValueError(f"ids must be (batch, t) with t >= 1, got shape {tuple(ids.shape)}; "
                             "add a batch dimension with ids[None] for one sequence")
        if caches is not None and (not isinstance(caches, (list, tuple)) or len(caches) != self.num_layers):
            raise ValueError(f"caches must be a list of {self.num_layers} KVCache objects, one per block (use "
                             f"model.new_caches()), got {type(caches).__name__} "
                             f"{'of length ' + str(len(caches)) if isinstance(caches, (list, tuple)) else ''}")
        if caches is not None and len({id(c) for c in caches}) != len(caches):
            raise ValueError("caches holds the same KVCache object more than once ([KVCache()] * n repeats one "
                             "object): each block needs a cache of its own; use model.new_caches()")
        if caches is not None:
            wrong = next(((i, c) for i, c in enumerate(caches)
                          if not isinstance(c, KVCache)), None)
            if wrong is not None:
                why = (" (a MemoryCache holds a fixed cross-attention memory and never grows)"
                       if isinstance(wrong[1], MemoryCache) else "")
                raise TypeError(f"caches[{wrong[0]}] is {type(wrong[1]).__name__}: every block needs a KVCache of "
                                f"its own{why}; use model.new_caches()")
            lengths = [len(c) for c in caches]
            if len(set(lengths)) > 1:
                raise ValueError(f"the caches hold different numbers of positions {lengths}: every block's cache "
                                 "must come from the same steps; start again with model.new_caches()")
        offset = len(caches[0]) if caches is not None else 0  # the position of ids[:, 0]
        t = ids.size(1)
        x = self.embedding(ids, offset, check_range=check_range)  # (batch, t, d_model)
        # the new tokens are the last t of offset + t positions; one token alone sees everything
        mask = causal_mask(t, offset + t, device=ids.device) if t > 1 else None  # (t, offset + t)
        x, weights = self.blocks(x, norm=self.norm, mask=mask, need_weights=need_weights,
                                 caches=caches)  # (batch, t, d_model), after the final LayerNorm
        return self.head(x), weights  # logits (batch, t, vocab)


@torch.no_grad()
def generate(model: TransformerLM, prompt: torch.Tensor, max_new_tokens: int, *, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, generator: torch.Generator | None = None,
             use_cache: bool = True) -> torch.Tensor:
    """Continue ``prompt`` one sampled token at a time (chapter 8).

    The model sees at most its ``max_len`` positions: once the text is longer, each step reads
    the last ``max_len`` tokens only (the context is cropped, as nanoGPT does). With absolute
    positions (learned or sinusoidal) a key-value cache cannot slide along: the cached keys
    were computed at positions that a cropped window gives to other tokens. So once the window is full, the
    cache is rebuilt from the cropped window at every step, one full forward pass of
    ``max_len`` tokens each, the cost of running without a cache.

    Args:
        model: a :class:`TransformerLM` (any model with its ``forward(ids, caches)``,
            ``new_caches()`` and ``max_len``).
        prompt: int64 ``(batch, t0)``, ``t0 >= 1``; a prompt longer than ``max_len`` is read
            from its last ``max_len`` tokens.
        max_new_tokens: how many tokens to add.
        temperature, top_k, top_p: how to draw each token (:func:`companion.next_token_probs`);
            ``temperature=0`` is greedy decoding.
        generator: random generator for the draws (seeded: the samples repeat).
        use_cache: keep every layer's keys and values (:class:`companion.KVCache`) and feed
            only the newest token; ``False`` reruns the model on the whole window each step.
            Both give the same tokens.

    Returns:
        int64 ``(batch, t0 + max_new_tokens)``: the whole prompt, then the new tokens.
    """
    if hasattr(model, "decoder") or not hasattr(model, "new_caches"):  # e.g. an encoder-decoder Transformer
        raise TypeError(f"generate continues a decoder-only language model (a TransformerLM), got "
                        f"{type(model).__name__}; an encoder-decoder Transformer decodes with "
                        "companion.greedy_decode or companion.beam_search")
    check_tokens("prompt", prompt)
    check_flags(use_cache=use_cache)
    if prompt.dim() != 2 or prompt.size(1) == 0:
        raise ValueError(f"prompt must be (batch, t0) with t0 >= 1, got shape {tuple(prompt.shape)}; "
                         "use prompt[None] for a single sequence")
    check_positive_int("max_new_tokens", max_new_tokens)
    window = model.max_len  # the most positions the model can read
    with evaluating(model):  # the caller's mode comes back, also after an error
        ids = prompt
        caches, step_input = None, None  # with a cache: the (cropped) prompt once, then the newest token
        for step in range(max_new_tokens):
            if not use_cache:
                step_input = ids[:, -window:]  # (batch, <= window): the whole text, cropped
            elif caches is None or len(caches[0]) + 1 > window:  # first step, or the window is full
                caches, step_input = model.new_caches(), ids[:, -window:]  # (re)build from the cropped text
            # the prompt's ids are checked once; sampled ones are in range by construction (no GPU wait)
            logits, _ = model(step_input, caches, check_range=step == 0)  # (batch, t, vocab)
            token = sample_next_token(logits[:, -1], temperature, top_k, top_p, generator=generator)  # (batch,)
            ids = torch.cat([ids, token[:, None]], dim=1)  # (batch, t + 1)
            step_input = token[:, None]  # (batch, 1)
    return ids


def train_language_model(model: TransformerLM, ids: torch.Tensor, *, steps: int, batch_size: int = 32,
                         block_size: int = 128, lr: float = 2e-3, warmup: int = 100, weight_decay: float = 0.01,
                         seed: int = 0, progress: bool = False, eval_ids: torch.Tensor | None = None,
                         eval_every: int | None = None) -> dict[str, list[float]]:
    """Train on random windows of ``ids`` with AdamW: a linear warm-up, then cosine decay (chapter 8).

    Args:
        model: a :class:`TransformerLM`; its device is used for the batches.
        ids: ``(n,)`` token ids of the training text.
        steps: number of optimizer steps.
        batch_size, block_size: ``batch_size`` windows of ``block_size`` tokens per step.
        lr, warmup, weight_decay: the optimizer's settings.
        seed: seeds the window draws.
        progress: show a progress bar.
        eval_ids, eval_every: held-out ``(n,)`` token ids, scored with
            :func:`evaluate_bits_per_char` (windows of ``block_size`` that overlap by half)
            every ``eval_every`` steps and after the last; the scoring time is left out of
            ``seconds``.

    Returns:
        ``{"bits": [...], "seconds": [...]}``: each step's training loss in bits per token,
        and the wall-clock time since the start; with ``eval_ids``, also ``"eval_steps"`` and
        ``"eval_bits"``: the steps done and the held-out bits per token there.
    """
    if block_size > model.max_len:
        raise ValueError(f"block_size={block_size} is longer than the model's max_len={model.max_len}")
    device = next(model.parameters()).device

    def loss(model, batch):
        x, y = (z.to(device) for z in batch)
        logits, _ = model(x)  # (batch, block_size, vocab)
        return F.cross_entropy(logits.flatten(0, 1), y.flatten())  # nats per token

    if (eval_ids is None) != (eval_every is None):
        raise ValueError("eval_ids and eval_every go together: give both (held-out ids, and how often) or neither")
    evals: dict[str, list[float]] = {"eval_steps": [], "eval_bits": []}

    def evaluate(done: int) -> None:
        evals["eval_steps"].append(done)
        evals["eval_bits"].append(evaluate_bits_per_char(model, eval_ids, block_size, stride=max(1, block_size // 2)))

    log = fit(model, draw=lambda g: random_windows(ids, block_size, batch_size, g), loss=loss, steps=steps,
              optimizer="adamw", lr=lr, weight_decay=weight_decay, schedule="cosine", warmup=warmup, clip=1.0,
              seed=seed, progress=progress, leave=True, every=eval_every,
              callback=None if eval_ids is None else evaluate)
    history = {"bits": [nats / math.log(2) for nats in log.loss], "seconds": log.seconds}
    return history | evals if eval_ids is not None else history


@torch.no_grad()
def evaluate_bits_per_char(model: TransformerLM, ids: torch.Tensor, block_size: int = 128,
                           stride: int | None = None, batch_size: int = 64) -> float:
    """Bits per token on held-out text: the mean of ``-log2 p(ids[i] | ids[:i])`` (chapter 8).

    The model reads windows of ``block_size`` tokens that start every ``stride`` tokens. The
    first window scores all its predictions; each later one only its last ``stride``, the
    tokens no earlier window scored, so every token after the first is scored exactly once,
    with at least ``block_size - stride`` tokens of context (except near the start).
    ``stride = block_size`` (the default) cuts the text into consecutive windows: cheapest,
    but a token at the start of a window is predicted from almost nothing.

    Args:
        model: a :class:`TransformerLM`.
        ids: ``(n,)`` token ids, ``n >= 2``.
        block_size: the window length, at most ``model.max_len``.
        stride: how far each window moves, ``1 <= stride <= block_size``.
        batch_size: windows per forward pass.

    Returns:
        the mean bits over the ``n - 1`` predicted tokens ``ids[1:]``.
    """
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"ids must be a 1-D torch.Tensor of token ids, got {type(ids).__name__}")
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(f"ids must hold integer token ids, got dtype {ids.dtype}; use ids.long() if these "
                        "really are ids (a float id is not truncated here)")
    if ids.dim() != 1 or ids.size(0) < 2:
        raise ValueError(f"ids must be a 1-D stream of at least 2 tokens, got shape {tuple(ids.shape)}")
    check_positive_int("batch_size", batch_size)
    check_positive_int("block_size", block_size)
    if block_size > model.max_len:
        raise ValueError(f"block_size={block_size} is longer than the model's max_len={model.max_len}")
    stride = block_size if stride is None else stride
    check_positive_int("stride", stride)
    if stride > block_size:
        raise ValueError(f"stride={stride} must be at most block_size={block_size}, or some tokens are never scored")
    with evaluating(model):  # the caller's mode comes back, also after an error
        device = next(model.parameters()).device
        ids = ids.long()
        n = ids.size(0) - 1  # predictions: ids[1:] from ids[:-1]
        # window w reads inputs [start, start + block_size) and scores the targets from `first` on
        windows, start = [], 0
        while True:
            first = 0 if start == 0 else block_size - stride  # earlier windows scored the rest
            stop = min(start + block_size, n)
            windows.append((start, stop, first))
            if stop == n:
                break
            start += stride
        total, count = 0.0, 0
        for length in sorted({stop - start for start, stop, _ in windows}):  # full windows, then the last one
            same = [w for w in windows if w[1] - w[0] == length]
            for i in range(0, len(same), batch_size):
                chunk = same[i: i + batch_size]
                x = torch.stack([ids[a:b] for a, b, _ in chunk]).to(device)  # (windows, length)
                y = torch.stack([ids[a + 1:b + 1] for a, b, _ in chunk]).to(device)
                logits, _ = model(x)  # (windows, length, vocab)
                nats = F.cross_entropy(logits.transpose(1, 2), y, reduction="none")  # (windows, length)
                for row, (_, _, first) in zip(nats, chunk):
                    total += row[first:].sum().item()
                    count += length - first
    return total / count / math.log(2)  # count == n: every prediction scored once
