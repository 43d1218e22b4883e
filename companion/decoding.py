"""Decoding: turning a trained sequence-to-sequence model into outputs (chapter 6; chapter 8 samples).

Training feeds the decoder the right previous tokens (teacher forcing). At test time there
are none: the decoder must read its **own** previous outputs. Greedy decoding takes the most
likely token at every step::

    y_0 = BOS
    y_i = argmax_v  p(v | source, y_0 .. y_{i-1})       until EOS, or max_len tokens
"""

from __future__ import annotations

import torch

from ._checks import check_positive_int, check_tokens

__all__ = ["greedy_decode"]


@torch.no_grad()
def greedy_decode(model, src: torch.Tensor, bos_id: int, eos_id: int, max_len: int,
                  src_mask: torch.Tensor | None = None, pad_id: int = 0) -> torch.Tensor:
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

    Returns:
        int64 ``(batch, 1 + n)`` with ``n <= max_len``: BOS, the generated tokens, and
        ``pad_id`` after each row's EOS.
    """
    check_tokens("src", src)
    check_positive_int("max_len", max_len)
    was_training = model.training
    model.eval()
    out = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)  # (batch, 1)
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)  # (batch,)
    for _ in range(max_len):
        logits = model(src, out, src_mask=src_mask)[0]  # (batch, t, vocab): the whole prefix again
        next_token = logits[:, -1].argmax(-1)  # (batch,): the last position's most likely token
        next_token = torch.where(done, torch.full_like(next_token, pad_id), next_token)
        out = torch.cat([out, next_token[:, None]], dim=1)
        done |= next_token == eos_id
        if done.all():
            break
    model.train(was_training)
    return out
