"""What an exercise is, and the tools its checks use.

Checks call the learner's function through :func:`call`, which passes the inputs, verifies
afterwards that they were not changed in place, and turns an error raised inside the
learner's code into a message with the case and a hint. :func:`expect_close` and
:func:`expect_equal` compare the result with a value computed by hand or by plain PyTorch
and say what is wrong: the type, the dtype, the shape, NaN, or the values.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Callable

import torch

# Bound now, before any learner code runs: a cell that replaces torch.allclose later cannot
# switch the comparisons off (and the tamper guard reports such a cell anyway).
_allclose, _equal, _isfinite, _is_tensor = torch.allclose, torch.equal, torch.isfinite, torch.is_tensor


from ..rule import RULE  # the one rule, quoted in the checks' hints


class Mismatch(AssertionError):
    """A check found a wrong answer; the message says the case, expected vs got, and a hint."""


@dataclass(frozen=True)
class Exercise:
    """One graded exercise.

    Attributes:
        id: stable id, e.g. ``"ch01-softargmax"``; notebook cells carry it in their metadata.
        title: a few words for tables.
        function: the name the learner's cell defines.
        checks: functions ``check(fn)`` that raise :class:`Mismatch` on a wrong answer.
        solution: the reference solution (the book shows its source).
        forbidden: attribute or function names the statement forbids (e.g. ``"softmax"``).
        allows: what the statement allows (:class:`Allows`); its checks run after ``checks``.
    """

    id: str
    title: str
    function: str
    checks: tuple[Callable, ...] = field(repr=False)
    solution: Callable = field(repr=False)
    forbidden: tuple[str, ...] = ()
    allows: "Allows | None" = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.allows is not None:
            object.__setattr__(self, "checks", tuple(self.checks) + self.allows.checks(self.function, self.solution))

    @property
    def chapter(self) -> str:
        """``"ch01"``: the chapter the exercise belongs to (the start of its id)."""
        return self.id.split("-", 1)[0]


def draws(seed: int):
    """``randn(*shape)`` from a generator seeded with ``seed``.

    A check makes its own (``randn = draws(21)`` inside the check), so every run of it sees the
    same numbers and the notebook and the grader print the same message for the same answer;
    a module's constants come from one made at import.
    """
    generator = torch.Generator().manual_seed(seed)
    return lambda *shape: torch.randn(*shape, generator=generator)


def _snapshot(value):
    if _is_tensor(value):
        return value.detach().clone()
    return copy.deepcopy(value)


def _same(a, b) -> bool:
    if _is_tensor(a):
        if not (_is_tensor(b) and a.shape == b.shape and a.dtype == b.dtype):
            return False
        if a.is_floating_point():  # NaN where NaN was is unchanged (NaN != NaN)
            return bool(((a == b) | (a.isnan() & b.isnan())).all())
        return _equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):  # e.g. a checkpoint: name -> tensor
        return type(a) is type(b) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


def call(fn, case: str, hint: str, **inputs):
    """``fn(*inputs.values())``, checked: an error names the case, and inputs must be unchanged.

    Raises:
        NotImplementedError: the stub was not replaced (reported as "not implemented yet").
        Mismatch: the function raised, exited, or changed one of its inputs in place.
    """
    saved = {name: _snapshot(value) for name, value in inputs.items()}
    try:
        got = fn(*inputs.values())
    except NotImplementedError:
        raise
    except SystemExit:
        raise Mismatch(f"{case}: your function called exit(); an exercise must return its result, "
                       "and exiting is not allowed") from None
    except NameError as error:  # most often a name the rule does not give the cell
        raise Mismatch(f"{case}: your function raised NameError: {error}. Hint: {RULE}") from None
    except Exception as error:  # a shape mismatch inside PyTorch, an IndexError, ...
        raise Mismatch(f"{case}: your function raised {type(error).__name__}: {str(error).rstrip('.')}. "
                       f"Hint: {hint}") from None
    for name, value in inputs.items():
        if not _same(value, saved[name]):
            raise Mismatch(f"{case}: your function changed its input `{name}` in place (the caller's data "
                           "changed). Hint: build new tensors and containers instead of changing the "
                           "given ones (z = z - m, not z -= m; no .zero_() or *=; no .pop(), appending "
                           "or item assignment on the caller's dicts and lists)")
    return got


def _type_problem(got, case: str, hint: str) -> Mismatch | None:
    if _is_tensor(got) and type(got) is not torch.Tensor:  # a subclass may redefine the comparisons
        return Mismatch(f"{case}: you returned a {type(got).__name__}, a subclass of torch.Tensor; return a "
                        "plain torch.Tensor. Hint: " + hint)
    if _is_tensor(got):
        return None
    if type(got).__module__.startswith("numpy"):
        return Mismatch(f"{case}: you returned a NumPy {type(got).__name__}; return a torch.Tensor "
                        "(stay in PyTorch: torch.exp, .sum, .max work on tensors). Hint: " + hint)
    if isinstance(got, (list, tuple)):
        return Mismatch(f"{case}: you returned a Python {type(got).__name__}; return a torch.Tensor "
                        "(torch.tensor(...) or, better, tensor operations). Hint: " + hint)
    return Mismatch(f"{case}: expected a torch.Tensor, got {type(got).__name__}. Hint: {hint}")


def _rows_for_message(got: torch.Tensor, expected: torch.Tensor, wrong: torch.Tensor) -> str:
    """``expected ..., got ...``: small tensors in full, larger ones where they first differ."""
    largest = None
    if got.is_floating_point() and expected.is_floating_point():
        largest = float((got.detach().double().cpu() - expected.double().cpu()).abs().nan_to_num(float("inf")).max())
    # 4 decimals, or enough significant digits that values which differ do not print alike
    digits = None
    if largest and largest < 1e-3:
        scale = float(expected.detach().double().abs().nan_to_num(0.0, 0.0, 0.0).max()) or largest
        digits = min(17, max(4, math.ceil(math.log10(scale / largest)) + 2))

    def show(value: float) -> float:
        return round(value, 4) if digits is None else float(f"{value:.{digits}g}")

    def values(x, k=None):
        x = x.detach().cpu()
        x = x if k is None else x.reshape(-1, x.shape[-1])[k]
        if not x.is_floating_point():
            return x.tolist()
        return [show(v) for v in x.double().flatten().tolist()] if x.dim() <= 1 else \
            [values(row) for row in x.double().unbind(0)]

    def one(x, place):
        value = x[tuple(place)].item()
        return show(value) if isinstance(value, float) else value

    if got.dim() < 2 or got.numel() <= 12:
        text = f"expected {values(expected)}, got {values(got)}"
    elif got.shape[-1] <= 12:  # the first wrong row
        rows = wrong.reshape(-1, wrong.shape[-1]).any(dim=-1)
        k = int(rows.nonzero()[0, 0]) if bool(rows.any()) else 0
        index = [int(i) for i in torch.unravel_index(torch.tensor(k), got.shape[:-1])]
        text = f"at row [{', '.join(map(str, index))}, :]: expected {values(expected, k)}, got {values(got, k)}"
    else:  # long rows: the first wrong entries
        places = wrong.nonzero()[:3].tolist()
        text = "; ".join(f"at {p}: expected {one(expected, p)}, got {one(got, p)}" for p in places)
    if largest is not None:
        if largest < 1e-3:  # say how far apart values that print nearly alike are
            text += f" (they differ by up to {largest:.1e}, too much for {expected.dtype})"
    return text


_TOLERANCES = {torch.float64: (1e-10, 1e-8), torch.float32: (1e-5, 1e-4),
               torch.float16: (1e-2, 1e-2), torch.bfloat16: (5e-2, 5e-2)}  # dtype -> (atol, rtol)


def expect_close(got, expected: torch.Tensor, case: str, hint: str, atol: float | None = None,
                 rtol: float | None = None) -> None:
    """Raise :class:`Mismatch` unless ``got`` is a tensor with ``expected``'s dtype, shape and values.

    The tolerance follows the dtype: ``atol=1e-5, rtol=1e-4`` in float32, ``1e-10, 1e-8`` in
    float64 (a float64 input must be computed in float64 all the way), ``1e-2`` in float16 and
    ``5e-2`` in bfloat16 (their rounding steps near 1 are 1e-3 and 8e-3, and a few operations
    in a row add them up).
    """
    problem = _type_problem(got, case, hint)
    if problem:
        raise problem
    if got.shape != expected.shape:
        raise Mismatch(f"{case}: expected shape {tuple(expected.shape)}, got shape {tuple(got.shape)}. Hint: {hint}")
    if got.dtype != expected.dtype:
        if expected.dtype in (torch.float16, torch.bfloat16) and got.dtype in (torch.float32, torch.float64):
            raise Mismatch(f"{case}: expected dtype {expected.dtype} (the input's), got {got.dtype}: your answer "
                           f"changed {expected.dtype} to {got.dtype}. Hint: build masks, weights and constants in "
                           "the input's dtype (torch.ones(d) and keep.float() are float32, and float32 times "
                           f"{expected.dtype} is float32): dtype=x.dtype, .to(x.dtype) or torch.ones_like(x)")
        raise Mismatch(f"{case}: expected dtype {expected.dtype}, got {got.dtype}. Hint: {hint} (the dtype the "
                       "statement names, most often the input's: no stray .double(), .float() or .long(), and new "
                       "tensors built with dtype=x.dtype or torch.zeros_like(x))")
    default_atol, default_rtol = _TOLERANCES.get(expected.dtype, (1e-5, 1e-4))
    atol = default_atol if atol is None else atol
    rtol = default_rtol if rtol is None else rtol
    got_values = got.detach()
    if not bool(_isfinite(got_values).all()) and bool(_isfinite(expected).all()):
        wrong = ~_isfinite(got_values)
        raise Mismatch(f"{case}: got NaN or inf ({_rows_for_message(got_values, expected, wrong)}). Hint: {hint}")
    if not _allclose(got_values, expected, atol=atol, rtol=rtol, equal_nan=True):  # NaN where expected, and inf
        both_nan = got_values.isnan() & expected.isnan()
        wrong = ~((got_values - expected).abs() <= atol + rtol * expected.abs()) & ~both_nan & (got_values != expected)
        raise Mismatch(f"{case}: {_rows_for_message(got_values, expected, wrong)}. Hint: {hint}")


def _leaves(t: torch.Tensor) -> list[torch.Tensor]:
    """The tensors that require gradients and from which ``t`` was computed (autograd's leaves)."""
    found, seen, stack = [], set(), [t.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):  # AccumulateGrad: a leaf
            found.append(node.variable)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return found or [t]


def expect_gradient(got: torch.Tensor, case: str, hint: str) -> None:
    """Raise :class:`Mismatch` unless ``got`` carries a gradient back to inputs that require one,
    and a backward pass through it runs (an in-place change of a tensor that autograd saved for
    the backward pass gives the right values, and fails only there)."""
    if not got.requires_grad:
        raise Mismatch(f"{case}: the result carries no gradient (requires_grad is False). Hint: {hint}")
    try:  # differentiate into the leaves without touching their .grad (a later check may read it)
        torch.autograd.grad(got, _leaves(got), torch.ones_like(got), retain_graph=True, allow_unused=True)
    except RuntimeError as error:
        first = str(error).split(". ")[0].split("\n")[0]
        raise Mismatch(f"{case}: the values are right, but the backward pass through your result fails "
                       f"({first}). Hint: an in-place operation (x.exp_(), x -= ..., x[...] = ...) on a tensor "
                       "that autograd saved breaks training: write it out of place (x = x.exp())") from None


@dataclass(frozen=True)
class Allows:
    """What an exercise's statement allows, so that its checks draw it (seeded: the same numbers
    every run, in the notebook and in the grader).

    Attributes:
        inputs: ``inputs(randn) -> dict`` of the function's arguments in call order, float
            tensors drawn with ``randn`` (a seeded ``draws``), without batch dimensions.
        batched: the arguments that take leading batch dimensions (the statement's ``...``),
            all the same; the checks give them two, ``(2, 3, ...)``.
        half: the statement asks for the result in the inputs' dtype, so float16 and bfloat16
            inputs are allowed; the checks try both.
        large: ``{argument: factor}``: the statement allows large values there (scores near 80
            and above, where ``exp`` overflows in float32); the checks multiply by ``factor``.

    The expected values come from the exercise's reference solution, run in float64 on the
    same inputs (one batch element at a time for the batch check), so the statement, the
    reference and the checks cannot disagree on these inputs.
    """

    inputs: Callable[[Callable], dict]
    batched: tuple[str, ...] = ()
    half: bool = False
    large: dict = field(default_factory=dict)

    def checks(self, function: str, solution: Callable) -> tuple[Callable, ...]:
        """The checks these allowances imply, for the learner's ``function`` (a name, for messages)."""
        made = []
        if self.batched:
            made.append(lambda fn: _check_batched(self, function, solution, fn))
        if self.half:
            for dtype in (torch.float16, torch.bfloat16):
                made.append(lambda fn, dtype=dtype: _check_half(self, function, solution, fn, dtype))
        if self.large:
            made.append(lambda fn: _check_large(self, function, solution, fn))
        return tuple(made)


def _as(value, dtype):
    return value.to(dtype) if _is_tensor(value) and value.is_floating_point() else value


def _reference(solution, inputs: dict, dtype):
    """The reference on ``inputs`` computed in float64, then cast to ``dtype`` (tuples too)."""
    with torch.no_grad():
        out = solution(**{k: _as(v, torch.float64) for k, v in inputs.items()})
    return tuple(_as(o, dtype) for o in out) if isinstance(out, tuple) else _as(out, dtype)


def _compare(got, expected, case: str, hint: str) -> None:
    if isinstance(expected, tuple):
        if not isinstance(got, tuple) or len(got) != len(expected):
            raise Mismatch(f"{case}: expected a tuple of {len(expected)} tensors, got {type(got).__name__}. "
                           f"Hint: {hint}")
        for k, (g, e) in enumerate(zip(got, expected)):
            _compare(g, e, f"{case}, item {k}", hint)
    elif expected.is_floating_point():
        expect_close(got, expected, case, hint)
    else:
        expect_equal(got, expected, case, hint)


def _describe_call(function: str, inputs: dict) -> str:
    parts = [f"{k} {tuple(v.shape)}" if _is_tensor(v) else f"{k}={v!r}" for k, v in inputs.items()]
    return f"{function}({', '.join(parts)})"


_BATCH_HINT = ("the statement allows any leading batch dimensions (its `...`): index from the end "
               "(transpose(-2, -1), dim=-1, x.shape[-1]), never transpose(1, 2), .T or x.shape[1]")
_HALF_HINT = ("keep {dtype} all the way: build masks, constants and new tensors in the input's dtype, and "
              "avoid what overflows in half precision (subtract a row's maximum before exp; float16's "
              "largest number is 65504, so a fill such as -1e9 does not fit: use float('-inf') or "
              "torch.finfo(dtype).min)")
_LARGE_HINT = ("in float32 exp overflows to inf above about 88 and underflows to 0 below about -103: "
               "subtract each row's own maximum (not one maximum for the whole tensor) before exp, so that "
               "every row's largest term is exp(0) = 1 (softmax does not change)")


def _check_batched(allows: Allows, function: str, solution, fn) -> None:
    randn = draws(1234)
    sets = [allows.inputs(randn) for _ in range(6)]  # 6 = a batch of (2, 3)
    inputs = dict(sets[0])
    for name in allows.batched:
        inputs[name] = torch.stack([s[name] for s in sets]).reshape(2, 3, *sets[0][name].shape)
    per_element = [_reference(solution, {**sets[0], **{n: s[n] for n in allows.batched}}, torch.float32)
                   for s in sets]
    if isinstance(per_element[0], tuple):
        expected = tuple(torch.stack([e[k] for e in per_element]).reshape(2, 3, *per_element[0][k].shape)
                         for k in range(len(per_element[0])))
    else:
        expected = torch.stack(per_element).reshape(2, 3, *per_element[0].shape)
    case = f"{_describe_call(function, inputs)}: two batch dimensions (2, 3) in front"
    _compare(call(fn, case, _BATCH_HINT, **inputs), expected, case, _BATCH_HINT)


def _check_half(allows: Allows, function: str, solution, fn, dtype) -> None:
    inputs = {k: _as(v, dtype) for k, v in allows.inputs(draws(4321)).items()}
    case = f"{_describe_call(function, inputs)} in {dtype}"
    hint = _HALF_HINT.format(dtype=dtype)
    _compare(call(fn, case, hint, **inputs), _reference(solution, inputs, dtype), case, hint)


def _check_large(allows: Allows, function: str, solution, fn) -> None:
    inputs = allows.inputs(draws(2468))
    inputs.update({k: inputs[k] * factor for k, factor in allows.large.items()})
    scaled = ", ".join(f"{k} times {factor:g}" for k, factor in allows.large.items())
    case = f"{_describe_call(function, inputs)}, large values ({scaled})"
    _compare(call(fn, case, _LARGE_HINT, **inputs), _reference(solution, inputs, torch.float32), case, _LARGE_HINT)


def expect_gradients_reach(outputs, inputs: dict, case: str, hint: str) -> None:
    """Raise :class:`Mismatch` unless every one of ``outputs`` carries a gradient and, together,
    they carry one to every tensor of ``inputs`` that requires it.

    A weight cut off by ``.detach()`` or ``torch.no_grad()`` would give the right values and
    never be trained; a second output (the attention weights beside the context) computed under
    ``torch.no_grad()`` would leave anything trained through it untouched.
    """
    for k, out in enumerate(outputs):
        which = case if len(outputs) == 1 else f"{case} (output {k} of {len(outputs)})"
        expect_gradient(out, which, hint)
    randn = draws(99)
    total = sum((out * randn(*out.shape, 1)[..., 0].to(out.dtype)).sum() for out in outputs)  # 0-d too
    names = [name for name, value in inputs.items() if _is_tensor(value) and value.requires_grad]
    grads = torch.autograd.grad(total, [inputs[name] for name in names], allow_unused=True)
    missing = [name for name, grad in zip(names, grads) if grad is None or not bool((grad != 0).any())]
    if missing:
        raise Mismatch(f"{case}: no gradient reaches {', '.join(missing)} (the values are right, but training "
                       f"could not change {'it' if len(missing) == 1 else 'them'}). Hint: {hint}")


def expect_equal(got, expected: torch.Tensor, case: str, hint: str) -> None:
    """Raise :class:`Mismatch` unless ``got`` equals ``expected`` exactly: dtype, shape and values."""
    problem = _type_problem(got, case, hint)
    if problem:
        raise problem
    if got.dtype != expected.dtype:
        raise Mismatch(f"{case}: expected dtype {expected.dtype}, got {got.dtype}. Hint: create it with "
                       f"dtype={expected.dtype}, or convert with .to({expected.dtype})")
    if got.shape != expected.shape:
        raise Mismatch(f"{case}: expected shape {tuple(expected.shape)}, got shape {tuple(got.shape)}. Hint: {hint}")
    if not _equal(got, expected):
        raise Mismatch(f"{case}: {_rows_for_message(got, expected, got != expected)}. Hint: {hint}")
