"""The package on a GPU: every chapter's full run "uses a GPU when there is one".

CI has no GPU, so these tests skip there; they run wherever ``torch.cuda.is_available()``
(``make test-cuda``). Each builds a module or a computation on the CPU, moves it to the GPU,
and asserts that the GPU gives the CPU's result (float32, to 1e-4: the GPU's kernels sum in
another order), and that what is made along the way (masks, caches, sampled ids, training
batches) lives on the GPU too.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from companion import (GroupedQueryAttention, MultiHeadAttention, Transformer, TransformerLM,
                       beam_search, causal_mask, generate, greedy_decode, linear_attention, repeat_kv,
                       sample_next_token, tiled_attention)
from companion.data.repeated import repeated_tokens
from companion.head_scores import induction_score, previous_token_score
from companion.models.attention_only import AttentionOnlyLM, repeat_losses, train_on_repeats

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: these run on a GPU only")
CUDA = torch.device("cuda")
TOL = dict(rtol=1e-4, atol=1e-4)


@pytest.fixture(autouse=True)
def _build_on_the_cpu():
    """Modules and inputs are built on the CPU, also under COURSE_TEST_DEVICE=cuda (make test-gpu)."""
    with torch.device("cpu"):
        yield


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def on_both(module):
    """The module on the CPU and an exact copy of it on the GPU, both in eval mode."""
    module = module.eval()
    return module, copy.deepcopy(module).to(CUDA)


@pytest.mark.parametrize("need_weights", [False, True])
def test_multi_head_attention_on_the_gpu_equals_the_cpu(need_weights):
    torch.manual_seed(0)
    cpu, gpu = on_both(MultiHeadAttention(32, 4))
    x, mask = randn(2, 7, 32), causal_mask(7)
    out, weights = cpu(x, x, x, mask=mask, need_weights=need_weights)
    out_gpu, weights_gpu = gpu(x.to(CUDA), x.to(CUDA), x.to(CUDA), mask=mask.to(CUDA), need_weights=need_weights)
    assert out_gpu.device.type == "cuda"
    torch.testing.assert_close(out_gpu.cpu(), out, **TOL)
    if need_weights:
        torch.testing.assert_close(weights_gpu.cpu(), weights, **TOL)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_multi_head_attention_runs_in_half_precision_on_the_gpu(dtype):
    torch.manual_seed(0)
    cpu, gpu = on_both(MultiHeadAttention(64, 4))
    gpu = gpu.to(dtype)
    x = randn(2, 9, 64)
    out, _ = gpu(*(x.to(CUDA, dtype),) * 3)
    assert out.dtype == dtype and bool(torch.isfinite(out).all())
    torch.testing.assert_close(out.float().cpu(), cpu(x, x, x)[0], rtol=0, atol=5e-2)


def test_grouped_query_attention_on_the_gpu_equals_its_heads_repeated():
    torch.manual_seed(0)
    cpu, gpu = on_both(GroupedQueryAttention(32, 4, num_kv_heads=2, rotary=True))
    x = randn(2, 6, 32)
    torch.testing.assert_close(gpu(*(x.to(CUDA),) * 3)[0].cpu(), cpu(x, x, x)[0], **TOL)
    Q, K = randn(1, 4, 5, 8).to(CUDA), randn(1, 2, 5, 8, seed=1).to(CUDA)
    torch.testing.assert_close(F.scaled_dot_product_attention(Q, repeat_kv(K, 2), repeat_kv(K, 2)),
                               F.scaled_dot_product_attention(Q, K, K, enable_gqa=True), **TOL)


@pytest.mark.parametrize("causal", [False, True])
def test_tiled_attention_on_the_gpu_equals_torchs_kernel_with_gradients(causal):
    Q, K, V = (randn(2, 3, 50, 16, seed=s).to(CUDA).requires_grad_() for s in range(3))
    ours = tiled_attention(Q, K, V, block_size=16, causal=causal)
    theirs = F.scaled_dot_product_attention(Q, K, V, is_causal=causal)
    torch.testing.assert_close(ours, theirs, **TOL)
    grads = torch.autograd.grad(ours.sum(), (Q, K, V))
    expected = torch.autograd.grad(theirs.sum(), (Q, K, V))
    for a, b in zip(grads, expected):
        torch.testing.assert_close(a, b, **TOL)


def test_linear_attention_on_the_gpu_equals_the_cpu():
    Q, K, V = (randn(1, 2, 40, 8, seed=s) for s in range(3))
    for causal in (False, True):
        torch.testing.assert_close(linear_attention(Q.to(CUDA), K.to(CUDA), V.to(CUDA), causal, chunk_size=7).cpu(),
                                   linear_attention(Q, K, V, causal, chunk_size=7), **TOL)


@pytest.mark.parametrize("block", [{}, dict(norm="rms", activation="swiglu", bias=False, rotary=True,
                                          positional="none", num_kv_heads=2)])
def test_cached_generation_on_the_gpu_equals_recomputation(block):
    torch.manual_seed(0)
    model = TransformerLM(20, d_model=32, num_heads=4, num_layers=2, max_len=16, **block).to(CUDA).eval()
    prompt = torch.tensor([[1, 2, 3]], device=CUDA)
    cached = generate(model, prompt, 10, temperature=0, use_cache=True)
    plain = generate(model, prompt, 10, temperature=0, use_cache=False)
    assert cached.device.type == "cuda" and torch.equal(cached, plain)
    caches = model.new_caches()
    logits, _ = model(prompt, caches)
    assert caches[0].K.device.type == "cuda" and len(caches[0]) == 3


def test_sampling_on_the_gpu_takes_a_gpu_generator_and_returns_gpu_ids():
    logits = randn(3, 50).to(CUDA)
    gen = torch.Generator(device=CUDA).manual_seed(0)
    ids = sample_next_token(logits, temperature=0.8, top_k=10, top_p=0.9, generator=gen)
    assert ids.device.type == "cuda" and ids.shape[0] == 3
    assert torch.equal(sample_next_token(logits, temperature=0), logits.argmax(-1, keepdim=True).view_as(ids))
    with pytest.raises(ValueError, match="generator is on cpu but logits are on cuda"):
        sample_next_token(logits, temperature=0.8, generator=torch.Generator().manual_seed(0))


def test_seq2seq_decoding_on_the_gpu_equals_the_cpu():
    torch.manual_seed(0)
    cpu, gpu = on_both(Transformer(12, 12, d_model=32, num_heads=4, num_encoder_layers=2, num_decoder_layers=2,
                                   dropout=0.0, max_len=20))
    src = torch.tensor([[3, 4, 5, 6, 2], [7, 8, 9, 2, 0]])
    mask = src != 0
    greedy = greedy_decode(cpu, src, 1, 2, max_len=8, src_mask=mask[:, None, :])
    greedy_gpu = greedy_decode(gpu, src.to(CUDA), 1, 2, max_len=8, src_mask=mask[:, None, :].to(CUDA))
    assert torch.equal(greedy_gpu.cpu(), greedy)
    beams, scores = beam_search(cpu, src, 1, 2, max_len=8, width=3, src_mask=mask[:, None, :])
    beams_gpu, scores_gpu = beam_search(gpu, src.to(CUDA), 1, 2, max_len=8, width=3,
                                        src_mask=mask[:, None, :].to(CUDA))
    assert torch.equal(beams_gpu.cpu(), beams)
    torch.testing.assert_close(scores_gpu.cpu(), scores, **TOL)


def test_chapter_11_trains_and_scores_on_the_gpu():
    torch.manual_seed(0)
    model = AttentionOnlyLM(16, 32, 2, 2, 24, "learned").to(CUDA)
    probe = repeated_tokens(8, 6, 16, torch.Generator().manual_seed(1))
    log = train_on_repeats(model, steps=20, vocab_size=16, halves=(4, 8), batch_size=8, seed=0, probe=probe,
                           every=10, progress=False)
    assert len(log["repeat"]) == 20 and bool(torch.isfinite(torch.as_tensor(log["repeat"])).all())
    ids, copyable = (x.to(CUDA) for x in probe)
    first, repeat = repeat_losses(model, ids, copyable)
    assert first.device.type == "cuda" and bool(torch.isfinite(repeat))
    with torch.no_grad():
        _, weights = model(ids, need_weights=True)
    assert weights[0].device.type == "cuda"
    previous = previous_token_score(weights[0])
    induction = induction_score(weights[1], half=6)
    assert previous.shape == induction.shape == (2,)
    assert bool(((previous >= 0) & (previous <= 1)).all()) and bool(((induction >= 0) & (induction <= 1)).all())
