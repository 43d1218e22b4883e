"""The course's one training loop: its schedule, its step, and every model trained through it."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from companion import FitLog, fit, warmup_cosine
from companion.models.train_loop import make_optimizer, optimizer_step


def test_warmup_cosine_rises_linearly_then_follows_half_a_cosine():
    factors = [warmup_cosine(s, 10, warmup=4) for s in range(10)]
    assert factors[:4] == [0.25, 0.5, 0.75, 1.0]
    assert factors[4:] == pytest.approx([0.5 * (1 + math.cos(math.pi * k / 6)) for k in range(6)])
    assert all(a > b for a, b in zip(factors[4:], factors[5:]))  # decays after the warm-up
    assert factors[-1] > 0  # the last step still learns


def test_warmup_zero_is_the_plain_cosine():
    """warmup=0 once raised ZeroDivisionError when the schedule was built (seq2seq, language model)."""
    assert [warmup_cosine(s, 8) for s in range(8)] == [0.5 * (1 + math.cos(math.pi * s / 8)) for s in range(8)]


@pytest.mark.parametrize("warmup", [-1, 2.5, True, None])
def test_a_warmup_that_is_not_a_step_count_is_refused(warmup):
    with pytest.raises(ValueError, match="warmup must be a number of steps, 0 or more"):
        warmup_cosine(0, 10, warmup)


def test_a_warmup_longer_than_the_run_rises_the_whole_time():
    """A shortened run (quick mode: 60 steps) keeps the full run's warm-up (100 steps)."""
    assert [warmup_cosine(s, 4, warmup=10) for s in range(4)] == [0.1, 0.2, 0.3, 0.4]


def tiny_task(generator):
    x = torch.randn(16, 3, generator=generator, device=generator.device).to(torch.get_default_device())
    return x, (x.sum(-1) > 0).long()


def tiny_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))


def cross_entropy(model, batch):
    return F.cross_entropy(model(batch[0]), batch[1])


def reference_loop(model, steps, lr, warmup, clip, weight_decay=0.01, seed=3):
    """The loop written out by hand, with PyTorch's own LambdaLR: what fit must reproduce."""
    generator = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: warmup_cosine(s, steps, warmup))
    losses = []
    for _ in range(steps):
        loss = cross_entropy(model, tiny_task(generator))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        schedule.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("warmup", [0, 5])
def test_fit_is_the_loop_written_out_by_hand(warmup):
    ours, theirs = tiny_model(), tiny_model()
    log = fit(ours, tiny_task, cross_entropy, steps=20, optimizer="adamw", lr=0.05, weight_decay=0.01,
              schedule="cosine", warmup=warmup, clip=0.5, seed=3)
    assert isinstance(log, FitLog) and len(log.loss) == len(log.seconds) == 20
    assert log.loss == reference_loop(theirs, 20, 0.05, warmup, 0.5)  # bit for bit
    for a, b in zip(ours.parameters(), theirs.parameters()):
        assert torch.equal(a, b)
    assert not ours.training  # left in evaluation mode


def test_fit_learns_and_its_seed_picks_the_batches():
    first = fit(tiny_model(), tiny_task, cross_entropy, steps=60, lr=0.05, seed=1)
    again = fit(tiny_model(), tiny_task, cross_entropy, steps=60, lr=0.05, seed=1)
    other = fit(tiny_model(), tiny_task, cross_entropy, steps=60, lr=0.05, seed=2)
    assert first.loss == again.loss and first.loss != other.loss
    assert sum(first.loss[-10:]) < 0.5 * sum(first.loss[:10])


def test_clipping_bounds_the_gradient_norm():
    model = tiny_model()
    opt = make_optimizer(model, "sgd", lr=0.0)
    loss = 1000 * cross_entropy(model, tiny_task(torch.Generator().manual_seed(0)))
    optimizer_step(model, opt, loss, clip=0.1)
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()]))
    assert norm == pytest.approx(0.1, rel=1e-4)


def test_the_callback_measures_along_the_way_without_changing_training_or_its_clock(monkeypatch):
    import companion.models.train_loop as train_loop
    clock = [0.0]

    def tick():  # a fake clock: every reading is one second later
        clock[0] += 1.0
        return clock[0]

    seen = []
    model = tiny_model()

    def measure(done):
        seen.append((done, model.training, torch.is_grad_enabled()))
        model(torch.ones(1, 3)).sum()  # no gradients: nothing to leak into the next step
        clock[0] += 1000.0  # a long measurement

    monkeypatch.setattr(train_loop.time, "perf_counter", tick)
    log = fit(model, tiny_task, cross_entropy, steps=10, lr=0.05, seed=3, every=4, callback=measure)
    monkeypatch.undo()
    assert seen == [(4, False, False), (8, False, False), (10, False, False)]  # every 4, and the last
    assert max(log.seconds) < 1000, "the callback's time must be left out of the training time"
    plain = fit(tiny_model(), tiny_task, cross_entropy, steps=10, lr=0.05, seed=3)
    assert log.loss == plain.loss  # the same training, bit for bit
    with pytest.raises(ValueError, match="every and callback go together"):
        fit(tiny_model(), tiny_task, cross_entropy, steps=5, every=2)
    with pytest.raises(ValueError, match="every"):
        fit(tiny_model(), tiny_task, cross_entropy, steps=5, every=0, callback=measure)


def test_bad_settings_are_refused_with_the_fix():
    with pytest.raises(ValueError, match='needs schedule="cosine"'):
        fit(tiny_model(), tiny_task, cross_entropy, steps=5, warmup=2)
    with pytest.raises(ValueError, match="schedule"):
        fit(tiny_model(), tiny_task, cross_entropy, steps=5, schedule="linear")
    with pytest.raises(ValueError, match="optimizer"):
        fit(tiny_model(), tiny_task, cross_entropy, steps=5, optimizer="lion")
    with pytest.raises(ValueError, match="steps"):
        fit(tiny_model(), tiny_task, cross_entropy, steps=0)


def test_every_training_function_of_the_course_runs_through_fit(monkeypatch):
    """One loop: each model's train_* function calls fit (none keeps a loop of its own)."""
    import companion.models.language_model as language_model
    import companion.models.retriever as retriever
    import companion.models.seq2seq as seq2seq
    import companion.models.two_relations as two_relations
    import companion.models.which_first as which_first
    from companion import (GRUSeq2Seq, Retriever, TransformerLM, TwoRelations, WhichFirst, random_rotation,
                           reversal_pairs)

    calls = []
    real = fit

    def counting_fit(*args, **kwargs):
        calls.append(kwargs.get("desc"))
        return real(*args, **kwargs)

    for module in (retriever, two_relations, which_first, seq2seq, language_model):
        monkeypatch.setattr(module, "fit", counting_fit)
    retriever.train_retriever(Retriever(8, 4), random_rotation(8, torch.Generator().manual_seed(0)), steps=2)
    two_relations.train_two_relations(TwoRelations(8, 12, 8, 2), steps=2)
    which_first.train_which_first(WhichFirst(6, "rotary"), steps=2)
    seq2seq.train_seq2seq(GRUSeq2Seq(8, 8, 8), reversal_pairs(16, 3, 5, 8, torch.Generator().manual_seed(0)),
                          steps=2, warmup=0)
    language_model.train_language_model(TransformerLM(8, d_model=8, num_heads=2, num_layers=1, max_len=16),
                                        torch.randint(0, 8, (200,)), steps=2, block_size=8, warmup=0)
    assert len(calls) == 5
