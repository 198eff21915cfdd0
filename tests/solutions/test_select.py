"""Hard (dictionary) and soft (softmax) selection."""

import pytest
import torch
import torch.nn.functional as F

from solutions import hard_select, soft_select

f64 = torch.float64


def test_hard_select_is_a_lookup(gen):
    keys = torch.tensor([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    values = torch.tensor([[10.0], [20.0], [30.0]])
    query = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.5, 0.5], [1.0, 1e-6]])
    out, w = hard_select(query, keys, values)
    expected_w = torch.tensor([[0, 1, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]], dtype=values.dtype)
    assert torch.equal(w, expected_w)  # only exact matches, all features equal
    assert torch.equal(out, torch.tensor([[20.0], [30.0], [0.0], [0.0]]))  # no match: zeros


def test_hard_select_batched_and_duplicates(gen):
    keys = torch.randint(0, 3, (2, 4, 6, 2), generator=gen).double()  # (B, H, S, d), repeats
    values = torch.randn(2, 4, 6, 5, generator=gen, dtype=f64)
    query = keys[:, :, [1, 4, 0], :]  # (B, H, L=3, d): queries that are keys
    out, w = hard_select(query, keys, values)
    assert out.shape == (2, 4, 3, 5) and w.shape == (2, 4, 3, 6) and w.dtype == f64
    for b in range(2):
        for h in range(4):
            for i in range(3):
                match = [j for j in range(6) if torch.equal(keys[b, h, j], query[b, h, i])]
                assert w[b, h, i].nonzero().flatten().tolist() == match
                torch.testing.assert_close(out[b, h, i], values[b, h, match].sum(0))


def test_soft_select_formula(gen):
    q = torch.randn(2, 3, 4, generator=gen, dtype=f64)
    k = torch.randn(2, 5, 4, generator=gen, dtype=f64)
    v = torch.randn(2, 5, 6, generator=gen, dtype=f64)
    for T in (0.3, 1.0, 4.0):
        out, w = soft_select(q, k, v, temperature=T)
        e = torch.exp(torch.einsum("bld,bsd->bls", q, k) / T)
        torch.testing.assert_close(w, e / e.sum(-1, keepdim=True))
        torch.testing.assert_close(out, w @ v)
    assert out.shape == (2, 3, 6)


def test_soft_select_temperature_limits(gen):
    keys = F.normalize(torch.randn(7, 3, generator=gen, dtype=f64), dim=-1)  # unit keys
    values = torch.randn(7, 2, generator=gen, dtype=f64)
    query = keys[[2, 5]]  # for unit keys, a key matches itself best (Cauchy-Schwarz)
    hard_out, hard_w = hard_select(query, keys, values)
    cold_out, cold_w = soft_select(query, keys, values, temperature=1e-4)
    torch.testing.assert_close(cold_w, hard_w, atol=1e-6, rtol=0)
    torch.testing.assert_close(cold_out, hard_out, atol=1e-6, rtol=0)
    hot_out, hot_w = soft_select(query, keys, values, temperature=1e6)
    # scores within [-1, 1] / 1e6 of each other: uniform up to about 1e-6
    torch.testing.assert_close(hot_w, torch.full((2, 7), 1 / 7, dtype=f64), atol=1e-5, rtol=0)
    torch.testing.assert_close(hot_out, values.mean(0).expand(2, 2), atol=1e-5, rtol=0)


def test_soft_select_has_gradients_hard_select_does_not(gen):
    q = torch.randn(1, 3, generator=gen, requires_grad=True)
    k = torch.randn(4, 3, generator=gen)
    v = torch.randn(4, 2, generator=gen)
    soft_select(q, k, v)[0].sum().backward()
    assert q.grad.abs().sum() > 0
    out, _ = hard_select(q, k, v)
    assert not out.requires_grad  # the match test is not differentiable


@pytest.mark.parametrize("T", [0.0, -1.0])
def test_soft_select_rejects_bad_temperature(T):
    x = torch.randn(1, 2, 3)
    with pytest.raises(ValueError, match="temperature"):
        soft_select(x, x, x, temperature=T)
