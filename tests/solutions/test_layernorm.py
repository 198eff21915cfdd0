"""LayerNorm written out by hand against nn.LayerNorm."""

import pytest
import torch
from torch import nn

from solutions import LayerNorm


def _pair(d, dtype, bias, gen):
    ref = nn.LayerNorm(d, bias=bias, dtype=dtype)
    with torch.no_grad():  # random affine parameters, so a swapped weight / bias shows
        ref.weight.copy_(1 + 0.5 * torch.randn(d, generator=gen))
        if bias:
            ref.bias.copy_(torch.randn(d, generator=gen))
    ours = LayerNorm(d, bias=bias).to(dtype)
    ours.load_state_dict(ref.state_dict())
    return ours, ref


@pytest.mark.parametrize("shape", [(5,), (2, 7, 8), (2, 3, 4, 16), (3, 1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bias", [True, False])
def test_matches_torch(shape, dtype, bias, gen):
    ours, ref = _pair(shape[-1], dtype, bias, gen)
    x = (3 * torch.randn(shape, generator=gen) + 2).to(dtype).requires_grad_(True)
    y = ours(x)
    expected = ref(x)
    assert y.dtype == dtype and y.shape == x.shape
    torch.testing.assert_close(y, expected)
    g = torch.randn(shape, generator=gen).to(dtype)
    params = [ours.weight] + ([ours.bias] if bias else [])
    ref_params = [ref.weight] + ([ref.bias] if bias else [])
    ours_grads = torch.autograd.grad(y, [x, *params], g)
    ref_grads = torch.autograd.grad(expected, [x, *ref_params], g)
    # float32: the gradients are sums of d products, compared to a rounding-level tolerance
    tol = {"atol": 1e-4, "rtol": 1e-4} if dtype == torch.float32 else {}
    for a, b in zip(ours_grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b, **tol)


def test_normalises(gen):
    ln = LayerNorm(64, eps=0.0)
    y = ln(5 * torch.randn(4, 64, generator=gen, dtype=torch.float64) - 3)
    torch.testing.assert_close(y.mean(-1), torch.zeros(4, dtype=torch.float64))
    # biased variance: mean of squares is exactly 1
    torch.testing.assert_close((y**2).mean(-1), torch.ones(4, dtype=torch.float64))


def test_constant_input_is_finite():
    """var = 0: eps inside the sqrt keeps the output (just the bias) and gradients finite."""
    ln = LayerNorm(4)
    with torch.no_grad():
        ln.bias.copy_(torch.arange(4.0))
    x = torch.full((2, 4), 3.0, requires_grad=True)
    y = ln(x)
    torch.testing.assert_close(y, torch.arange(4.0).expand(2, 4))
    y.sum().backward()
    assert torch.isfinite(x.grad).all()


def test_eps_is_used(gen):
    x = torch.randn(3, 6, generator=gen, dtype=torch.float64)
    for eps in (1e-5, 0.5):
        torch.testing.assert_close(LayerNorm(6, eps=eps).double()(x),
                                   nn.LayerNorm(6, eps=eps, dtype=torch.float64)(x))


def test_gradcheck(gen):
    ln = LayerNorm(5).double()
    with torch.no_grad():
        ln.weight.normal_(generator=gen)
        ln.bias.normal_(generator=gen)
    x = torch.randn(2, 3, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w, b: _functional(ln, x, w, b),
                                    (x, ln.weight, ln.bias))


def _functional(ln, x, w, b):
    return torch.func.functional_call(ln, {"weight": w, "bias": b}, (x,))
