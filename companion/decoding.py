"""Decoding: turning a trained sequence-to-sequence model into outputs (chapter 6; chapter 8 samples).

Training feeds the decoder the right previous tokens (teacher forcing). At test time there
are none: the decoder must read its **own** previous outputs. Greedy decoding takes the most
likely token at every step::

    y_0 = BOS
    y_i = argmax_v  p(v | source, y_0 .. y_{i-1})       until EOS, or max_len tokens

Run naively, step ``i`` feeds the whole prefix through the decoder again: ``i`` positions
each, so ``n`` tokens cost ``n^2 / 2`` positions. A :class:`companion.Transformer` decodes
with caches instead (:meth:`~companion.Transformer.decode_step`): one position per step.

Greedy can be wrong: the most likely first token may lead to unlikely continuations. Beam
search keeps the ``width`` most probable prefixes (by the sum of their log-probabilities)
at every step and returns the most probable finished one; width 1 is greedy.
"""

from __future__ import annotations

import torch

from ._checks import check_batch_mask, check_flags, check_positive_int, check_tokens
from .eval_mode import evaluating

__all__ = ["greedy_decode", "beam_search"]


def _check_decoding(model, src: torch.Tensor, max_len: int, src_mask=None, **ids: int) -> None:
    """The decoders' front door: ``src`` holds tokens, and BOS, EOS and padding are ids of the target.

    An EOS id outside the vocabulary is never emitted, so decoding would silently run to
    ``max_len``; a BOS or pad id outside it fails later with a message about the wrong thing.
    """
    if hasattr(model, "new_caches") and not hasattr(model, "decoder"):  # a decoder-only model (TransformerLM)
        raise TypeError("greedy_decode and beam_search decode an encoder-decoder (a source in, a target out); a "
                        "TransformerLM continues a prompt: use companion.generate(model, prompt, max_new_tokens, "
                        "temperature=0) for greedy decoding")
    check_tokens("src", src)
    if src.size(1) == 0:
        raise ValueError(f"src has no tokens (shape {tuple(src.shape)}): decoding needs at least one source "
                         "token per row (an empty source can be padded to one token and masked)")
    check_positive_int("max_len", max_len)
    positions = getattr(getattr(getattr(model, "decoder", None), "embed", None), "max_len", None)
    if positions is not None and max_len > positions:  # the last token is chosen at position max_len - 1
        raise ValueError(f"max_len={max_len} tokens need {max_len} decoder positions, but the model's decoder "
                         f"holds {positions} (its max_len): pass max_len <= {positions}")
    check_batch_mask("src_mask", src_mask, src.size(0), 1, src.size(1), "(batch, 1, t_src)")
    vocab = getattr(getattr(model, "output_proj", None), "out_features", None)  # None: a model of another kind
    for name, value in ids.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int token id, got {type(value).__name__} {value!r}")
        if value < 0 or (vocab is not None and value >= vocab):
            upper = f"{vocab}" if vocab is not None else "the vocabulary size"
            raise ValueError(f"{name} must be a token id of the target vocabulary, in [0, {upper}), got {value}"
                             + (" (that id is never emitted, so decoding would never stop)" if name == "eos_id"
                                else ""))


@torch.no_grad()
def greedy_decode(model, src: torch.Tensor, bos_id: int, eos_id: int, max_len: int,
                  src_mask: torch.Tensor | None = None, pad_id: int = 0, use_cache: bool = True) -> torch.Tensor:
    """Decode ``src`` one token at a time, always taking the most likely next token (chapter 6).

    Args:
        model: called as ``model(src, tgt, src_mask=src_mask)`` and returning
            ``(logits (batch, t_tgt, vocab), ...)``, as :class:`companion.Transformer` does.
        src: int64 ``(batch, t_src)``.
        bos_id: the token every output starts with.
        eos_id: the token that ends an output; a row stops growing once it emitted it.
        max_len: the most tokens generated after BOS.
        src_mask: optional bool ``(batch, 1, t_src)``, ``True`` on real source tokens.
        pad_id: written after a row's EOS while other rows still decode.
        use_cache: with a model that has ``decode_step`` (:class:`companion.Transformer`),
            encode the source once and decode one position per step; ``False`` runs the
            whole prefix through ``model`` at every step (the same tokens, slower).

    Returns:
        int64 ``(batch, 1 + n)`` with ``n <= max_len``: BOS, the generated tokens, and
        ``pad_id`` after each row's EOS.
    """
    _check_decoding(model, src, max_len, src_mask, bos_id=bos_id, eos_id=eos_id, pad_id=pad_id)
    check_flags(use_cache=use_cache)
    with evaluating(model):  # the caller's mode comes back, also after an error
        cached = use_cache and hasattr(model, "decode_step")
        if cached:
            memory = model.encoder(src, mask=src_mask)[0]  # (batch, t_src, d_model), once
            caches = model.new_caches()
        out = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)  # (batch, 1)
        done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)  # (batch,)
        for _ in range(max_len):
            if cached:  # the newest token only: (batch, 1, vocab)
                logits = model.decode_step(out[:, -1:], memory, caches, src_mask=src_mask)
            else:
                logits = model(src, out, src_mask=src_mask)[0]  # (batch, t, vocab): the whole prefix again
            next_token = logits[:, -1].argmax(-1)  # (batch,): the last position's most likely token
            next_token = torch.where(done, torch.full_like(next_token, pad_id), next_token)
            out = torch.cat([out, next_token[:, None]], dim=1)
            done |= next_token == eos_id
            if done.all():
                break
    return out


@torch.no_grad()
def beam_search(model, src: torch.Tensor, bos_id: int, eos_id: int, max_len: int, width: int = 4,
                src_mask: torch.Tensor | None = None, pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Keep the ``width`` most probable prefixes at every step; return the best per source (chapter 6).

    A prefix's score is the sum of its tokens' log-probabilities (no length penalty). A
    prefix that emitted EOS is finished: it keeps its score and grows only by ``pad_id``.
    Decoding stops when every kept prefix is finished, or after ``max_len`` tokens; then
    the highest-scoring kept prefix of each source wins. ``width=1`` is greedy decoding.

    Args:
        model, src, bos_id, eos_id, max_len, src_mask, pad_id: as for :func:`greedy_decode`
            (the model is run on the whole prefix at every step).
        width: how many prefixes to keep per source.

    Returns:
        ``(tokens, log_prob)``: int64 ``(batch, 1 + n)`` as :func:`greedy_decode` returns
        them, and the winners' summed log-probabilities ``(batch,)``.
    """
    _check_decoding(model, src, max_len, src_mask, bos_id=bos_id, eos_id=eos_id, pad_id=pad_id)
    check_positive_int("width", width)
    with evaluating(model):  # the caller's mode comes back, also after an error
        batch, device = src.size(0), src.device
        src_k = src.repeat_interleave(width, dim=0)  # (batch * width, t_src): each source once per beam
        mask_k = None if src_mask is None else src_mask.repeat_interleave(width, dim=0)
        out = torch.full((batch * width, 1), bos_id, dtype=torch.long, device=device)  # (batch * width, 1)
        score = torch.full((batch, width), float("-inf"), device=device)  # (batch, width)
        score[:, 0] = 0.0  # one live prefix (BOS) per source at the start, not width copies of it
        done = torch.zeros(batch * width, dtype=torch.bool, device=device)  # (batch * width,)
        for _ in range(max_len):
            logits = model(src_k, out, src_mask=mask_k)[0][:, -1].float()  # (batch * width, vocab)
            log_p = torch.log_softmax(logits, dim=-1)
            vocab = log_p.size(-1)
            finished = torch.full_like(log_p, float("-inf"))
            finished[:, pad_id] = 0.0  # a finished prefix grows by padding, at no cost
            log_p = torch.where(done[:, None], finished, log_p)
            candidates = (score.reshape(-1, 1) + log_p).reshape(batch, width * vocab)  # (batch, width * vocab)
            score, index = candidates.topk(width, dim=-1)  # (batch, width): the best continuations
            beam, token = index // vocab, index % vocab  # which prefix each continues, with which token
            rows = (torch.arange(batch, device=device)[:, None] * width + beam).reshape(-1)  # (batch * width,)
            out = torch.cat([out[rows], token.reshape(-1, 1)], dim=1)
            done = done[rows] | (token.reshape(-1) == eos_id)
            if done.all():
                break
    best = score.argmax(dim=-1)  # (batch,)
    rows = torch.arange(batch, device=device) * width + best
    return out[rows], score[torch.arange(batch, device=device), best]
