"""Helpers for comparing companion modules with PyTorch's own."""

import torch

from companion import torch_state_dict

# The bar: outputs, weights and gradients equal to 1e-10 in float64, 1e-5 in float32.
TOL = {torch.float64: 1e-10, torch.float32: 1e-5}


def assert_close(actual, expected, dtype, what=""):
    torch.testing.assert_close(actual, expected, atol=TOL[dtype], rtol=0, msg=lambda m: f"{what}: {m}")


def leaf(shape, dtype):
    """A random input that records its gradient."""
    return torch.randn(*shape, dtype=dtype).requires_grad_()


def backward_with(out, seed=1):
    """Backpropagate a fixed random projection of ``out`` (a plain .sum() hides sign errors)."""
    g = torch.Generator(torch.get_default_device()).manual_seed(seed)
    (out * torch.randn(out.shape, generator=g, dtype=out.dtype)).sum().backward()


def assert_same_grads(ours, theirs, dtype):
    """Parameter gradients of a companion module equal those of its PyTorch counterpart."""
    ours_grads = torch_state_dict(ours, grad=True)
    theirs_grads = {n: p.grad for n, p in theirs.named_parameters()}
    assert ours_grads.keys() == theirs_grads.keys()
    for name in ours_grads:
        assert_close(ours_grads[name], theirs_grads[name], dtype, f"grad of {name}")
