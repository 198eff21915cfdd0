"""Nadaraya-Watson kernel regression as attention pooling."""

import math

import pytest
import torch

from solutions import gaussian_kernel_weights, nadaraya_watson

f64 = torch.float64


def test_weights_formula_1d(gen):
    xq = torch.randn(4, generator=gen, dtype=f64)
    xk = torch.randn(6, generator=gen, dtype=f64)
    h = 0.7
    w = gaussian_kernel_weights(xq, xk, bandwidth=h)
    assert w.shape == (4, 6)
    expected = torch.empty(4, 6, dtype=f64)
    for i in range(4):
        k = [math.exp(-((xq[i] - xk[j]).item() ** 2) / (2 * h**2)) for j in range(6)]
        expected[i] = torch.tensor(k, dtype=f64) / sum(k)
    torch.testing.assert_close(w, expected)
    torch.testing.assert_close(w.sum(-1), torch.ones(4, dtype=f64))


def test_batched_equals_loop(gen):
    xq = torch.randn(2, 3, 5, generator=gen, dtype=f64)
    xk = torch.randn(2, 3, 8, generator=gen, dtype=f64)
    y = torch.randn(2, 3, 8, generator=gen, dtype=f64)
    pred, w = nadaraya_watson(xq, xk, y, bandwidth=0.5)
    assert pred.shape == (2, 3, 5) and w.shape == (2, 3, 5, 8)
    for a in range(2):
        for b in range(3):
            p, _ = nadaraya_watson(xq[a, b], xk[a, b], y[a, b], bandwidth=0.5)
            torch.testing.assert_close(pred[a, b], p)
            torch.testing.assert_close(p, gaussian_kernel_weights(xq[a, b], xk[a, b], 0.5)
                                       @ y[a, b])


def test_vector_targets(gen):
    xq, xk = torch.randn(5, generator=gen), torch.randn(9, generator=gen)
    y = torch.randn(9, 3, generator=gen)
    pred, w = nadaraya_watson(xq, xk, y)
    assert pred.shape == (5, 3)
    for c in range(3):
        torch.testing.assert_close(pred[:, c], nadaraya_watson(xq, xk, y[:, c])[0])


def test_bandwidth_limits(gen):
    xk = torch.linspace(-3, 3, 7, dtype=f64)
    y = torch.randn(7, generator=gen, dtype=f64)
    # tiny bandwidth: at a training point, only that point counts
    torch.testing.assert_close(nadaraya_watson(xk, xk, y, bandwidth=0.05)[0], y)
    # huge bandwidth: every point counts the same, the prediction is the mean
    pred, _ = nadaraya_watson(torch.tensor([-10.0, 0.3, 8.0], dtype=f64), xk, y, bandwidth=1e4)
    torch.testing.assert_close(pred, y.mean().expand(3))
    # constant targets stay constant
    torch.testing.assert_close(nadaraya_watson(xk + 0.1, xk, torch.full((7,), 2.0, dtype=f64))[0],
                               torch.full((7,), 2.0, dtype=f64))


def test_far_query_is_stable(gen):
    """Every kernel value underflows to 0 far away; the softmax still picks the nearest key."""
    xk = torch.tensor([0.0, 1.0, 2.0])
    y = torch.tensor([5.0, 6.0, 7.0])
    pred, w = nadaraya_watson(torch.tensor([1e3]), xk, y, bandwidth=0.1)
    assert torch.isfinite(w).all()
    torch.testing.assert_close(pred, torch.tensor([7.0]))


def test_gradients_reach_queries_and_keys(gen):
    xq = torch.randn(3, generator=gen, dtype=f64, requires_grad=True)
    xk = torch.randn(5, generator=gen, dtype=f64, requires_grad=True)
    y = torch.randn(5, generator=gen, dtype=f64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b, c: nadaraya_watson(a, b, c, 0.8)[0], (xq, xk, y))


@pytest.mark.parametrize("h", [0.0, -0.5])
def test_rejects_bad_bandwidth(h):
    with pytest.raises(ValueError, match="bandwidth"):
        gaussian_kernel_weights(torch.zeros(2), torch.zeros(3), bandwidth=h)
