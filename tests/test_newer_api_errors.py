"""Mistakes with the newer API (chapters 6, 8, 9, 10) get a clear error or the right result, never a
silent wrong answer: each case from a probe of 224 mistaken calls that returned a wrong result,
or raised an error naming the wrong cause. The message must name the argument and what was wrong."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from companion import (GroupedQueryAttention, KVCache, KneserNeyLM, NGramLM, PositionwiseFeedForward, RMSNorm,
                       SwiGLU, TiledAttention, Transformer, TransformerLM, apply_rotary, beam_search, greedy_decode,
                       linear_attention, online_softmax, sample_next_token, tiled_attention)
from companion.linear_attention import linear_attention_weights
from companion.models.language_model import evaluate_bits_per_char
from companion.models.ngram_lm import fit_kneser_ney, fit_ngram

NAN, INF = float("nan"), float("inf")


def _qkv(t_q=5, t_k=7, d=4):
    g = torch.Generator().manual_seed(0)
    return (torch.randn(1, 2, t_q, d, generator=g), torch.randn(1, 2, t_k, d, generator=g),
            torch.randn(1, 2, t_k, 3, generator=g))


# --- silent wrong results ------------------------------------------------------------------


def test_one_cache_object_shared_by_every_layer_is_refused():
    model = TransformerLM(11, d_model=16, num_heads=2, num_layers=2, max_len=32)
    with pytest.raises(ValueError, match=r"same KVCache object more than once.*new_caches\(\)"):
        model(torch.randint(0, 11, (1, 4)), [KVCache()] * 2)


@pytest.mark.parametrize("decode", [greedy_decode, beam_search])
@pytest.mark.parametrize("name", ["bos_id", "eos_id", "pad_id"])
def test_special_ids_outside_the_vocabulary_are_refused_by_name(decode, name):
    model = Transformer(11, 11, d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=1)
    ids = {"bos_id": 1, "eos_id": 2, "pad_id": 0, name: 11}
    with pytest.raises(ValueError, match=rf"{name} must be a token id of the target vocabulary, in \[0, 11\)"):
        decode(model, torch.randint(1, 11, (2, 5)), max_len=5, **ids)


def test_an_empty_source_is_refused_as_such():
    model = Transformer(11, 11, d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=1)
    with pytest.raises(ValueError, match="src has no tokens"):
        greedy_decode(model, torch.zeros(2, 0, dtype=torch.long), 1, 2, 5)


@pytest.mark.parametrize("temperature", [0, 1.0])
@pytest.mark.parametrize("logits, why", [([[1.0, NAN, 0.0]], "NaN"), ([[-INF, -INF]], "all -inf"),
                                         ([[1.0, INF]], r"\+inf")])
def test_logits_without_a_distribution_are_refused_at_every_temperature(temperature, logits, why):
    with pytest.raises(ValueError, match=why):
        sample_next_token(torch.tensor(logits), temperature)


def test_an_empty_vocabulary_is_refused():
    with pytest.raises(ValueError, match="empty vocabulary"):
        sample_next_token(torch.zeros(2, 0), 1.0)


def test_float_ids_are_not_truncated_by_the_evaluation():
    model = TransformerLM(11, d_model=16, num_heads=2, num_layers=1, max_len=32)
    with pytest.raises(TypeError, match="ids must hold integer token ids"):
        evaluate_bits_per_char(model, torch.arange(10.0) + 0.7, block_size=8)


@pytest.mark.parametrize("model", [NGramLM(2, 5), KneserNeyLM(2, 5)], ids=["add-k", "kneser-ney"])
def test_one_token_cannot_be_scored_and_no_tokens_cannot_be_fitted(model):
    with pytest.raises(ValueError, match="ids holds no tokens"):
        model.fit([])
    model.fit(np.array([1, 2, 3, 1, 2, 4]))
    with pytest.raises(ValueError, match="at least 2 tokens"):
        model.bits_per_char([3])


def test_every_add_k_constant_is_checked_and_an_empty_search_is_refused():
    ids = np.array([1, 2, 3, 1, 2, 4])
    with pytest.raises(ValueError, match=r"every k in ks must be a finite number > 0.*-0.5"):
        fit_ngram(2, ids, ids, 5, ks=(1.0, -0.5))
    with pytest.raises(ValueError, match="ks is empty"):
        fit_ngram(2, ids, ids, 5, ks=())
    with pytest.raises(ValueError, match="discounts is empty"):
        fit_kneser_ney(2, ids, ids, 5, discounts=())


def test_the_empty_context_is_the_start_of_text():
    p = KneserNeyLM(3, 5).fit(np.array([1, 2, 3, 1, 2, 4])).next_probs([])
    assert p.shape == (5,) and math.isclose(p.sum(), 1.0)


def test_tiled_attention_over_no_keys_is_zero_as_pytorchs():
    Q, K, V = _qkv()
    got = tiled_attention(Q, K[..., :0, :], V[..., :0, :])
    expected = F.scaled_dot_product_attention(Q, K[..., :0, :], V[..., :0, :])
    assert torch.equal(got, expected) and torch.equal(got, torch.zeros_like(got))


def test_what_the_wrappers_refuse_their_insides_refuse_too():
    Q, K, V = _qkv()
    with pytest.raises(ValueError, match="t_k >= t_q"):
        TiledAttention.apply(Q, K[..., :3, :], V[..., :3, :], 2, True)
    with pytest.raises(ValueError, match="block_size must be a positive int"):
        TiledAttention.apply(Q, K, V, 0, False)
    with pytest.raises(ValueError, match="t_k >= t_q"):
        linear_attention_weights(Q, K[..., :3, :], causal=True)
    with pytest.raises(ValueError, match="must agree"):
        linear_attention_weights(Q, K[..., :3])


@pytest.mark.parametrize("causal", [False, True])
def test_linear_attention_whose_weights_underflow_is_refused_not_nan(causal):
    Q, K, V = _qkv()
    with pytest.raises(ValueError, match="rounded to 0"):
        linear_attention(Q, torch.full_like(K, -120.0), V, causal=causal)


@pytest.mark.parametrize("fn", [lambda Q, K, V: linear_attention(Q, K, V, causal="no"),
                                lambda Q, K, V: linear_attention_weights(Q, K, causal="no"),
                                lambda Q, K, V: tiled_attention(Q, K, V, causal="no")])
def test_causal_must_be_a_bool_everywhere(fn):
    with pytest.raises(TypeError, match="causal must be True or False"):
        fn(*_qkv())


def test_rotary_refuses_positions_and_an_offset_together():
    with pytest.raises(ValueError, match="give positions or offset, not both"):
        apply_rotary(torch.randn(1, 5, 4), torch.arange(5), offset=3)


# --- errors that named the wrong cause --------------------------------------------------------


@pytest.mark.parametrize("x, why", [([1.0, NAN], "NaN"), ([1.0, INF], r"\+inf"), ([-INF, -INF], "all -inf")])
def test_online_softmax_names_the_real_problem(x, why):
    with pytest.raises(ValueError, match=why):
        online_softmax(torch.tensor(x), 2)


def test_online_softmax_of_empty_rows_is_empty_as_torchs():
    x = torch.zeros(3, 0)
    assert torch.equal(online_softmax(x, 2), torch.softmax(x, -1))


@pytest.mark.parametrize("fn", [lambda x: online_softmax(x, 2), RMSNorm(4)], ids=["online_softmax", "RMSNorm"])
def test_a_zero_dimensional_input_is_named(fn):
    with pytest.raises(ValueError, match=r"0-d|last dimension"):
        fn(torch.tensor(1.0))


@pytest.mark.parametrize("module", [SwiGLU(16, 32), PositionwiseFeedForward(16, 32), RMSNorm(16)],
                         ids=["SwiGLU", "PositionwiseFeedForward", "RMSNorm"])
def test_blocks_name_a_wrong_width_and_a_wrong_dtype(module):
    with pytest.raises(ValueError, match="last dimension d_model=16"):
        module(torch.randn(2, 3, 8))
    with pytest.raises(TypeError, match="dtype torch.float64 but the module's weights are torch.float32"):
        module(torch.randn(2, 3, 16, dtype=torch.float64))


def test_grouped_query_attention_names_a_wrong_dtype():
    x = torch.randn(2, 3, 16, dtype=torch.float64)
    with pytest.raises(TypeError, match="module's weights are torch.float32"):
        GroupedQueryAttention(16, 4, 2)(x, x, x)


def test_a_corrupt_checkpoint_is_named_and_no_unsafe_advice_is_given(tmp_path):
    from companion.models.checkpoint import read_checkpoint
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ValueError, match=r"model\.safetensors is not a readable safetensors file"):
        read_checkpoint(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    (tmp_path / "pytorch_model.bin").write_bytes(b"not a pickle")
    with pytest.raises(ValueError, match=r"pytorch_model\.bin could not be read") as caught:
        read_checkpoint(tmp_path)
    assert "never loaded with weights_only=False" in str(caught.value)


def test_imdb_names_the_variable_and_the_file_that_is_not_utf8(tmp_path, monkeypatch):
    from companion.data.imdb import load_imdb, read_imdb
    monkeypatch.setenv("COURSE_IMDB", str(tmp_path / "typo.tar.gz"))
    with pytest.raises(FileNotFoundError, match="COURSE_IMDB names"):
        load_imdb()
    review = tmp_path / "aclImdb" / "train" / "pos" / "1_9.txt"
    review.parent.mkdir(parents=True)
    review.write_bytes(b"caf\xe9")  # Latin-1, not UTF-8
    with pytest.raises(ValueError, match=r"1_9\.txt is not UTF-8"):
        read_imdb(tmp_path)


@pytest.mark.parametrize("value", ["inf", "1e9", "nan", "abc", "0", "-1", "1e-300", "0.5"])
def test_the_graders_timeout_is_a_bounded_number_of_seconds(value, capsys):
    from companion.course.grading import main
    with pytest.raises(SystemExit) as stopped:
        main(["somewhere", "--timeout", value])
    assert stopped.value.code == 2  # argparse's usage error, never "an exercise failed"
    err = capsys.readouterr().err
    assert "--timeout must be a number of seconds from 1" in err and "to 86,400" in err and "_positive" not in err


def test_the_grader_refuses_an_empty_folder_name(capsys):
    from companion.course.grading import main
    with pytest.raises(SystemExit) as stopped:
        main(["", "--chapter", "3"])  # Path("") is the current folder
    assert stopped.value.code == 2 and "an empty name would grade the current folder" in capsys.readouterr().err


def test_an_unexpected_grader_failure_exits_2(monkeypatch, tmp_path, capsys):
    from companion.course import grading

    def broken(*args, **kwargs):
        raise RuntimeError("a bug in the grader")

    monkeypatch.setattr(grading, "grade_folder", broken)
    assert grading.main([str(tmp_path)]) == grading.EXIT_GRADER_ERROR
    assert "grader error: RuntimeError: a bug in the grader" in capsys.readouterr().err


# --- a second probe (589 mistaken calls, chapters 6 to 11): its silent wrong results ---------

def _tiny_lm():
    torch.manual_seed(0)
    return TransformerLM(12, d_model=16, num_heads=2, num_layers=2, max_len=8).eval()


def test_a_memory_cache_is_refused_where_self_attention_needs_a_growing_cache():
    from companion import MemoryCache, MultiHeadAttention
    lm, ids = _tiny_lm(), torch.randint(0, 12, (2, 4), generator=torch.Generator().manual_seed(1))
    with pytest.raises(TypeError, match=r"caches\[0\] is MemoryCache.*KVCache of its own"):
        lm(ids, [MemoryCache(), MemoryCache()])
    x = torch.randn(2, 3, 8)
    with pytest.raises(TypeError, match="MemoryCache, which holds a cross-attention memory.*needs a KVCache"):
        MultiHeadAttention(8, 2)(x, x, x, cache=MemoryCache())


def test_caches_of_unequal_lengths_are_refused():
    lm, ids = _tiny_lm(), torch.randint(0, 12, (2, 4), generator=torch.Generator().manual_seed(1))
    caches = lm.new_caches()
    with torch.no_grad():
        lm(ids[:, :3], caches)
        with pytest.raises(ValueError, match=r"different numbers of positions \[3, 0\]"):
            lm(ids[:, 3:], [caches[0], KVCache(8)])


def test_small_integer_ids_get_a_clear_error_not_pytorchs():
    lm = _tiny_lm()
    for dtype in (torch.uint8, torch.int16):
        with pytest.raises(TypeError, match=r"int64 \(or int32\) token ids.*use ids.long\(\)"):
            lm(torch.zeros(1, 3, dtype=dtype))
    lm(torch.zeros(1, 3, dtype=torch.int32))  # int32 indexes an embedding: accepted


def test_rms_norm_in_half_precision_does_not_overflow():
    x = torch.full((1, 8), 300.0, dtype=torch.float16)  # 300^2 = 90,000 > float16's 65,504
    ours = RMSNorm(8, eps=1e-6).half()(x)
    torch.testing.assert_close(ours, torch.nn.RMSNorm(8, eps=1e-6).half()(x))
    assert ours.dtype == torch.float16 and bool((ours == 1).all())


def test_linear_attention_in_half_precision_is_not_zero():
    g = torch.Generator().manual_seed(0)
    Q, K, V = (torch.randn(1, 1, 1024, 64, generator=g) for _ in range(3))
    for causal in (False, True):
        half = linear_attention(Q.half(), K.half(), V.half(), causal)
        assert half.dtype == torch.float16
        torch.testing.assert_close(half.float(), linear_attention(Q, K, V, causal), rtol=0, atol=2e-3)
    rows = linear_attention_weights(Q.half(), K.half()).float().sum(-1)
    torch.testing.assert_close(rows, torch.ones_like(rows), rtol=0, atol=1e-2)


def test_tiled_attention_keeps_a_nan_as_pytorchs_kernel_does():
    Q, K, V = _qkv()
    Q[0, 0, 1, 0] = NAN
    ours, theirs = tiled_attention(Q, K, V), F.scaled_dot_product_attention(Q, K, V)
    assert bool(torch.isnan(ours[0, 0, 1]).all()) and bool(torch.isnan(theirs[0, 0, 1]).all())
    torch.testing.assert_close(ours[0, 1], theirs[0, 1])  # the other head is untouched
    assert bool((tiled_attention(Q[..., :0, :], K, V) == 0).all())  # no queries: nothing
    assert bool((tiled_attention(_qkv()[0], K[..., :0, :], V[..., :0, :]) == 0).all())  # no keys: 0


def test_head_scores_refuse_what_is_not_attention_weights():
    from companion import causal_mask, induction_score, previous_token_score
    scores = torch.randn(2, 3, 6, 6, generator=torch.Generator().manual_seed(0))
    weights = scores.masked_fill(~causal_mask(6), -INF).softmax(-1)
    previous_token_score(weights), induction_score(weights, 3)  # accepted
    for wrong in (scores, 3 * weights, -weights, weights.transpose(-1, -2)):
        with pytest.raises(ValueError, match="must be attention weights.*after the softmax"):
            previous_token_score(wrong)
        with pytest.raises(ValueError, match="must be attention weights"):
            induction_score(wrong, 3)


def test_repeat_losses_and_train_on_repeats_check_what_they_are_given():
    from companion import AttentionOnlyLM, repeated_tokens
    from companion.models import repeat_losses, train_on_repeats
    torch.manual_seed(0)
    model = AttentionOnlyLM(10, d_model=16, num_heads=2, num_layers=2, max_len=16)
    ids, copyable = repeated_tokens(3, 4, 10, torch.Generator().manual_seed(0))
    repeat_losses(model, ids, copyable)  # accepted
    with pytest.raises(ValueError, match=r"copyable must be the bool \(3, 7\) mask"):
        repeat_losses(model, ids, copyable.long())  # integer indexing would pick rows 0 and 1
    with pytest.raises(ValueError, match=r"\(batch, 2 half\) with half >= 2"):
        repeat_losses(model, ids[:, :7], copyable[:, :6])
    with pytest.raises(ValueError, match="marks no prediction"):
        repeat_losses(model, ids, torch.zeros_like(copyable))
    with pytest.raises(ValueError, match=r"2 <= low <= high \(a half of 1"):
        train_on_repeats(model, steps=1, vocab_size=10, halves=(1, 1))
    with pytest.raises(ValueError, match=r"vocab_size=20 is larger than the model's vocabulary \(10\)"):
        train_on_repeats(model, steps=1, vocab_size=20, halves=(2, 4))
    with pytest.raises(TypeError, match="halves must be a pair of ints"):
        train_on_repeats(model, steps=1, vocab_size=10, halves=(2.5, 4))
    with pytest.raises(TypeError, match="probe must be the pair"):
        train_on_repeats(model, steps=1, vocab_size=10, halves=(2, 4), probe=ids)
    with pytest.raises(TypeError, match="must be an AttentionOnlyLM"):
        train_on_repeats(_tiny_lm(), steps=1, vocab_size=10, halves=(2, 4))


@pytest.mark.parametrize("cls", [NGramLM, KneserNeyLM])
@pytest.mark.parametrize("start_id", [1.5, True, "0"])
def test_an_ngram_models_start_id_is_an_int_never_cut(cls, start_id):
    with pytest.raises(TypeError, match="start_id must be an int token id"):
        cls(2, 5, start_id=start_id)


def test_add_k_refuses_a_bool():
    with pytest.raises(ValueError, match="k must be a finite number > 0"):
        NGramLM(2, 5, k=True)


# --- a third probe (stop 53): truthy strings, float ids, scalars where a sequence goes ----------

from companion import MultiHeadAttention, generate, next_token_probs  # noqa: E402
from companion.data.chars import CharVocab, random_windows  # noqa: E402
from companion.models.bert import BertConfig  # noqa: E402
from companion.models.pretrained import layer_state_dict  # noqa: E402

_LM = TransformerLM(10, d_model=16, num_heads=2, num_layers=1, max_len=16)
_PROMPT = torch.zeros(1, 2, dtype=torch.long)
_X = torch.randn(1, 3, 8)


@pytest.mark.parametrize("call, name", [
    (lambda: generate(_LM, _PROMPT, 2, use_cache="no"), "use_cache"),
    (lambda: SwiGLU(8, 16, bias="no"), "bias"),
    (lambda: PositionwiseFeedForward(8, 16, bias="False"), "bias"),
    (lambda: MultiHeadAttention(8, 2)(_X, _X, _X, need_weights="yes"), "need_weights"),
    (lambda: MultiHeadAttention(8, 2, rotary="yes"), "rotary"),
    (lambda: TransformerLM(10, d_model=16, num_heads=2, num_layers=1, bias="no"), "bias"),
], ids=["generate", "SwiGLU", "feed-forward", "need_weights", "rotary", "TransformerLM"])
def test_a_truthy_string_is_not_taken_for_true(call, name):
    with pytest.raises(TypeError, match=rf"{name} must be True or False, got str"):
        call()


def test_greedy_decode_refuses_a_truthy_string_for_use_cache():
    model = Transformer(6, 6, d_model=8, num_heads=2, num_encoder_layers=1, num_decoder_layers=1)
    with pytest.raises(TypeError, match="use_cache must be True or False, got str"):
        greedy_decode(model, torch.ones(1, 3, dtype=torch.long), 1, 2, 4, use_cache="no")


@pytest.mark.parametrize("ids", [torch.arange(50.0), torch.arange(50) > 25], ids=["float", "bool"])
def test_random_windows_refuses_ids_that_are_not_integers(ids):
    with pytest.raises(TypeError, match="ids must hold integer token ids"):
        random_windows(ids, 8, 2)


@pytest.mark.parametrize("ids, error, match", [
    ([1.0, 2.5], TypeError, "ids must be integers, got 1.0"),
    (torch.tensor([1.0, 2.0]), TypeError, "integer token ids, got a tensor of dtype torch.float32"),
    (torch.tensor([[1, 2]]), ValueError, "one sequence of ids"),
], ids=["float list", "float tensor", "a batch"])
def test_char_vocab_decode_names_what_is_wrong_with_the_ids(ids, error, match):
    with pytest.raises(error, match=match):
        CharVocab.build("helo wrd").decode(ids)


def test_rotary_refuses_nan_positions():
    with pytest.raises(ValueError, match="positions must be finite"):
        apply_rotary(torch.randn(1, 4, 8), torch.tensor([0.0, NAN, 2.0, 3.0]))


@pytest.mark.parametrize("batch_size", [0, "8"])
def test_evaluation_names_a_wrong_batch_size(batch_size):
    with pytest.raises((TypeError, ValueError), match="batch_size must be a positive int"):
        evaluate_bits_per_char(_LM, torch.randint(0, 10, (100,)), block_size=8, batch_size=batch_size)


def test_a_single_constant_where_a_search_goes_is_named():
    ids = torch.randint(0, 5, (100,))
    with pytest.raises(TypeError, match=r"ks must be a sequence .* ks=\(0.1,\)"):
        fit_ngram(2, ids, ids, 5, ks=0.1)
    with pytest.raises(TypeError, match=r"discounts must be a sequence .* discounts=\(0.75,\)"):
        fit_kneser_ney(2, ids, ids, 5, discounts=0.75)


def test_sampling_names_a_generator_that_is_not_one_and_takes_a_numpy_temperature():
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        generate(_LM, _PROMPT, 2, temperature=1.0, generator=5)
    with pytest.raises(TypeError, match="temperature must be a number"):
        next_token_probs(torch.randn(1, 10), "1")
    logits = torch.randn(2, 10)
    assert torch.equal(next_token_probs(logits, np.float32(0.5)), next_token_probs(logits, 0.5))


def test_a_missing_checkpoint_layer_is_named():
    with pytest.raises(KeyError, match="the checkpoint has no 'encoder.layer.0.attention.self.query.weight'"):
        layer_state_dict({}, 0)


_BERT = dict(vocab_size=10, hidden_size=12, num_hidden_layers=1, num_attention_heads=3, intermediate_size=4,
             max_position_embeddings=8, type_vocab_size=2, layer_norm_eps=1e-12, hidden_act="gelu")


@pytest.mark.parametrize("change, match", [
    (dict(hidden_size=-1), "hidden_size must be a positive integer"),
    (dict(hidden_size=10), "hidden_size 10 is not divisible by num_attention_heads 3"),
    (dict(layer_norm_eps=0.0), "layer_norm_eps must be a finite number > 0"),
    (dict(hidden_act="gelu_new"), "hidden_act must be one of"),
], ids=["negative width", "heads", "eps", "activation"])
def test_a_bert_config_built_directly_is_checked(change, match):
    BertConfig(**_BERT)  # the unchanged one is fine
    with pytest.raises(ValueError, match=match):
        BertConfig(**(_BERT | change))
