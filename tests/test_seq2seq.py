"""Chapter 6's sequence-to-sequence pieces: the reversal task, additive attention, the GRU
encoder-decoder, greedy decoding, training and exact match."""

import pytest
import torch
from torch import nn

from companion import (AdditiveAttention, GRUSeq2Seq, Transformer, exact_match, greedy_decode, reversal_pairs,
                       reversal_splits, train_seq2seq, translate)
from companion.data.reversal import BOS, EOS, PAD


def test_reversal_pairs_by_hand():
    pairs = reversal_pairs(200, 2, 7, vocab_size=9, generator=torch.Generator().manual_seed(0))
    assert pairs.src.shape == (200, 7) and pairs.tgt.shape == (200, 9)
    assert pairs.lengths.min() == 2 and pairs.lengths.max() == 7
    for src, tgt, n in zip(pairs.src.tolist(), pairs.tgt.tolist(), pairs.lengths.tolist()):
        assert all(3 <= s < 9 for s in src[:n]) and src[n:] == [PAD] * (7 - n)
        assert tgt == [BOS] + src[:n][::-1] + [EOS] + [PAD] * (7 - n)


def test_subsets_are_trimmed_to_their_longest_source():
    pairs = reversal_pairs(50, 2, 9, generator=torch.Generator().manual_seed(1))
    short = pairs[pairs.lengths <= 4]
    assert short.src.size(1) == 4 and short.tgt.size(1) == 6 and len(short) == int((pairs.lengths <= 4).sum())


def test_splits_hold_out_what_training_saw_and_the_longer_split_is_longer():
    splits = reversal_splits(train=3000, valid=300, test=300, lengths=(2, 5), longer=(6, 8), vocab_size=6)
    seen = {tuple(r[:n]) for r, n in zip(splits["train"].src.tolist(), splits["train"].lengths.tolist())}
    for name in ("valid", "test"):
        held = {tuple(r[:n]) for r, n in zip(splits[name].src.tolist(), splits[name].lengths.tolist())}
        assert not held & seen and 0 < len(splits[name]) < 300  # short sources repeat: some were dropped
    assert splits["longer"].lengths.min() == 6 and splits["train"].lengths.max() == 5
    again = reversal_splits(train=3000, valid=300, test=300, lengths=(2, 5), longer=(6, 8), vocab_size=6)
    assert torch.equal(again["test"].src, splits["test"].src)


@pytest.mark.parametrize("call, message", [
    (lambda: reversal_pairs(5, 6, 4), "min_len must be <= max_len"),
    (lambda: reversal_pairs(5, 2, 4, vocab_size=3), "vocab_size must be at least 4"),
    (lambda: reversal_splits(lengths=(4, 16), longer=(10, 20)), "longer split must start above"),
])
def test_reversal_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_additive_attention_by_hand_and_masked():
    torch.manual_seed(0)
    attention = AdditiveAttention(3, 4, 5).double()
    s, h = torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 6, 4, dtype=torch.float64)
    scores = torch.stack([torch.stack([attention.v.weight[0] @ torch.tanh(attention.W_q.weight @ s[b]
                                       + attention.W_k.weight @ h[b, j] + attention.W_k.bias) for j in range(6)])
                          for b in range(2)])
    context, weights = attention(s, h)
    torch.testing.assert_close(weights, torch.softmax(scores, -1))
    torch.testing.assert_close(context, torch.einsum("bt,btd->bd", weights, h))
    mask = torch.tensor([[True] * 6, [True, True, True, False, False, False]])
    _, masked = attention(s, h, mask)
    assert (masked[1, 3:] == 0).all()
    torch.testing.assert_close(masked.sum(-1), torch.ones(2, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"mask must be a bool tensor of shape \(batch, t\) = \(2, 6\)"):
        attention(s, h, mask.float())


@pytest.mark.parametrize("attention", [False, True])
def test_gru_padding_changes_nothing_and_outputs_do_not_see_later_targets(attention):
    torch.manual_seed(0)
    model = GRUSeq2Seq(10, 8, 16, attention=attention).eval()
    src = torch.tensor([[3, 4, 5, 6]])
    padded = torch.tensor([[3, 4, 5, 6, PAD, PAD]])
    tgt = torch.tensor([[BOS, 6, 5, 4, 3]])
    a, wa = model(src, tgt, need_weights=True)
    b, wb = model(padded, tgt, src_mask=(padded != PAD)[:, None, :], need_weights=True)
    torch.testing.assert_close(a, b)
    if attention:
        assert wa.shape == (1, 5, 4) and wb.shape == (1, 5, 6) and (wb[..., 4:] == 0).all()
    else:
        assert wa is None
    changed = tgt.clone()
    changed[0, 3:] = 7
    torch.testing.assert_close(model(src, changed)[0][:, :3], a[:, :3])  # steps 0..2 read tokens 0..2 only
    assert not torch.allclose(model(src, changed)[0][:, 3:], a[:, 3:])


class Counter(nn.Module):
    """A fake model whose next token is the previous one plus 1: it shows what decoding feeds back."""

    def __init__(self, vocab=12):
        super().__init__()
        self.vocab, self.dummy = vocab, nn.Parameter(torch.zeros(1))

    def forward(self, src, tgt, src_mask=None):
        next_token = (tgt + src[:, :1]) % self.vocab  # each row counts up by its own step src[:, 0]
        return nn.functional.one_hot(next_token, self.vocab).float(), None


def test_greedy_decoding_feeds_back_its_own_outputs_and_stops_at_eos():
    src = torch.tensor([[1, 0], [2, 0], [1, 0]])
    out = greedy_decode(Counter(), src, bos_id=5, eos_id=9, max_len=6, pad_id=0)
    assert out.tolist() == [[5, 6, 7, 8, 9],  # 5 -> 6 -> 7 -> 8 -> 9 = EOS: it read its own outputs
                            [5, 7, 9, 0, 0],  # EOS after two steps, then padding
                            [5, 6, 7, 8, 9]]  # and decoding stopped once every row had its EOS
    never = greedy_decode(Counter(), torch.tensor([[1, 0]]), bos_id=5, eos_id=99, max_len=3)
    assert never.tolist() == [[5, 6, 7, 8]]  # no EOS: cut at max_len tokens after BOS


def test_attention_gru_learns_short_reversals_and_an_untrained_one_does_not():
    torch.manual_seed(0)
    splits = reversal_splits(train=2000, valid=10, test=200, lengths=(2, 4), longer=(5, 6), vocab_size=7)
    model = GRUSeq2Seq(7, 16, 32, attention=True)
    losses = train_seq2seq(model, splits["train"], steps=300, lr=3e-3, warmup=20)
    assert losses[-1] < losses[0] / 5
    ok = exact_match(model, splits["test"])
    assert ok.dtype == torch.bool and ok.float().mean() > 0.9
    out = translate(model, splits["test"])
    assert out.shape == splits["test"].tgt.shape
    assert torch.equal(ok, (out == splits["test"].tgt).all(dim=1))
    untrained = GRUSeq2Seq(7, 16, 32, attention=True)
    assert exact_match(untrained, splits["test"]).float().mean() < 0.2  # a whole sequence right is rare by luck


def test_transformer_decodes_with_the_same_interface():
    torch.manual_seed(0)
    model = Transformer(7, 7, d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, dropout=0.0,
                        max_len=16)
    pairs = reversal_pairs(5, 2, 4, vocab_size=7, generator=torch.Generator().manual_seed(0))
    out = translate(model, pairs)
    assert out.shape == pairs.tgt.shape and out[:, 0].eq(BOS).all()


def test_the_chapters_constructors_build_its_models():
    from companion.models.seq2seq import reversal_gru, reversal_transformer

    def count(m):
        return sum(p.numel() for p in m.parameters())

    # chapter 6's table prints these counts: a change to a constructor shows there and here
    assert count(reversal_transformer(13)) == 236_237
    assert count(reversal_gru(13, attention=False)) == 143_437
    assert count(reversal_gru(13, attention=True)) == 192_845
    deep = reversal_transformer(13, norm_first=False, num_layers=6)
    assert len(deep.encoder.layers) == len(deep.decoder.layers) == 6
    assert not deep.encoder.layers[0].norm_first


def test_the_stored_seq2seq_results_describe_the_chapters_models():
    """Change a constructor or a setting of benchmarks/seq2seq.py and this fails until make
    bench-seq2seq has been re-run."""
    import importlib.util
    from pathlib import Path

    from companion.models.seq2seq import load_seq2seq_results, reversal_gru, reversal_transformer

    spec = importlib.util.spec_from_file_location("bench", Path(__file__).parents[1] / "benchmarks" / "seq2seq.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    results = load_seq2seq_results()
    for name, cfg in bench.SETTINGS.items():
        stored = results["norm"][name]
        assert {k: stored[k] for k in cfg} == cfg
        assert [(r["norm"], r["seed"]) for r in stored["runs"]] == [
            (norm, seed) for seed in bench.SEEDS for norm in ("pre-norm", "post-norm")]
        for run in stored["runs"]:
            model = reversal_transformer(13, run["norm"] == "pre-norm", cfg["layers"])
            assert run["params"] == sum(p.numel() for p in model.parameters())
            assert len(run["losses"]) == cfg["steps"] and 0 <= run["test"] <= 1
    runs = results["gru"]["runs"]
    assert tuple(run["steps"] for run in runs) == bench.GRU_STEPS
    for run in runs:
        assert 0 <= run["test"] <= 1 and set(run["by_length"]) == {str(n) for n in range(4, 25)}
        assert run["params"] == sum(p.numel() for p in reversal_gru(13, attention=False).parameters())
    runs = results["seeds"]["runs"]
    assert [(run["model"], run["seed"]) for run in runs] == [(name, seed) for seed in bench.MORE_SEEDS
                                                             for name in bench.THREE]
    for run in runs:
        build, steps, lr = bench.THREE[run["model"]]
        assert (run["steps"], run["lr"]) == (steps, lr)
        assert run["params"] == sum(p.numel() for p in build().parameters())
        assert 0 <= run["test"] <= 1 and set(run["by_length"]) == {str(n) for n in range(4, 25)}
    # the chapter trains seed 0 of the same three models with the same steps and learning rates
    import json
    import re

    cells = json.loads((Path(__file__).parents[1] / "chapters" / "06_encoder_decoder.ipynb").read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    rnn_steps = int(re.search(r"^RNN_STEPS = \d+ if QUICK else (\d+)", code, re.M).group(1))
    tf_steps = int(re.search(r"^TF_STEPS = \d+ if QUICK else (\d+)", code, re.M).group(1))
    assert rnn_steps == bench.THREE["GRU, no attention"][1] == bench.THREE["GRU + attention"][1]
    assert tf_steps == bench.THREE["Transformer"][1]
    assert re.search(r"train_seq2seq\(gru, S\[\"train\"\], RNN_STEPS, lr=3e-3", code)
    assert re.search(r"train_seq2seq\(gru_att, S\[\"train\"\], RNN_STEPS, lr=3e-3", code)
    assert re.search(r"train_seq2seq\(model, S\[\"train\"\], TF_STEPS, lr=1e-3", code)
    assert bench.THREE["GRU, no attention"][2] == bench.THREE["GRU + attention"][2] == 3e-3
    assert bench.THREE["Transformer"][2] == 1e-3


def test_seq2seq_results_are_saved_by_section(tmp_path, monkeypatch):
    from companion.models import seq2seq

    monkeypatch.setattr(seq2seq, "SEQ2SEQ_RESULTS", tmp_path / "r.json")
    with pytest.raises(FileNotFoundError, match="make bench-seq2seq"):
        seq2seq.load_seq2seq_results()
    seq2seq.save_seq2seq_results({"gru": {"steps": 1}})
    seq2seq.save_seq2seq_results({"norm": {"recipe": {}}})
    assert seq2seq.load_seq2seq_results() == {"gru": {"steps": 1}, "norm": {"recipe": {}}}
    seq2seq.save_seq2seq_results({"seeds": {"runs": []}})
    assert seq2seq.load_seq2seq_results()["seeds"] == {"runs": []}
    with pytest.raises(ValueError, match="'norm', 'gru' or 'seeds'"):
        seq2seq.save_seq2seq_results({"other": {}})


def test_the_transformer_passes_bias_and_rotary_to_both_stacks():
    from companion import Transformer, greedy_decode

    torch.manual_seed(0)
    plain = Transformer(7, 7, d_model=8, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, dropout=0.0)
    lean = Transformer(7, 7, d_model=8, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, dropout=0.0,
                       bias=False, rotary=True, positional="none")
    assert any(name.endswith("bias") for name, _ in plain.named_parameters())
    assert not [name for name, _ in lean.named_parameters() if name.endswith("bias")]
    layers = [*lean.encoder.layers, *lean.decoder.layers]
    assert all(layer.self_attn.rotary for layer in layers)
    src = torch.randint(3, 7, (2, 5))
    cached = greedy_decode(lean.eval(), src, 1, 2, 6)  # rotary positions through the decoder's caches
    plain_steps = greedy_decode(lean, src, 1, 2, 6, use_cache=False)
    assert torch.equal(cached, plain_steps)
