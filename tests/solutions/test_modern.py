"""Today's attention pieces against PyTorch's own modules in float64, or, where PyTorch has
none, against an independent formulation and the property that defines them."""

import math

import pytest
import torch
import torch.nn.functional as F

import solutions as S

f64 = torch.float64


def test_rotary_matches_the_complex_form():
    """RoFormer's Eq. 34 as complex multiplication: pair (x0, x1) is x0 + i x1, turned by
    e^(i m theta)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 7, 16, generator=g, dtype=f64)
    positions = torch.arange(7, dtype=f64)
    theta = 10000.0 ** (-torch.arange(0, 16, 2, dtype=f64) / 16)
    turn = torch.polar(torch.ones(7, 8, dtype=f64), positions[:, None] * theta)   # (T, d/2)
    want = torch.view_as_real(torch.view_as_complex(x.reshape(2, 3, 7, 8, 2)) * turn)
    torch.testing.assert_close(S.apply_rotary(x), want.reshape(2, 3, 7, 16))


def test_rotary_scores_depend_only_on_the_offset():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(32, generator=g, dtype=f64), torch.randn(32, generator=g, dtype=f64)

    def score(m, n):
        rq = S.apply_rotary(q[None], torch.tensor([m], dtype=f64))[0]
        rk = S.apply_rotary(k[None], torch.tensor([n], dtype=f64))[0]
        return (rq @ rk).item()

    for m, n in [(0, 3), (5, 2), (100, 97)]:
        for shift in (1, 17, 1000):
            assert score(m + shift, n + shift) == pytest.approx(score(m, n), abs=1e-9)
    assert score(0, 3) != pytest.approx(score(0, 4))                 # the offset does matter
    x = torch.randn(5, 32, generator=g, dtype=f64)
    torch.testing.assert_close(S.apply_rotary(x).norm(dim=-1), x.norm(dim=-1))  # a rotation
    torch.testing.assert_close(S.apply_rotary(x)[0], x[0])                       # m = 0
    with pytest.raises(ValueError, match="odd"):
        S.apply_rotary(torch.randn(3, 5))


@pytest.mark.parametrize("n_kv_head", [1, 2, 4])
def test_grouped_query_attention_matches_pytorch(n_kv_head):
    torch.manual_seed(0)
    gqa = S.GroupedQueryAttention(16, 4, n_kv_head).double()
    x = torch.randn(2, 6, 16, dtype=f64)
    out, att = gqa(x, is_causal=True)
    q = gqa.heads(gqa.q_proj(x), 4)
    k, v = gqa.heads(gqa.k_proj(x), n_kv_head), gqa.heads(gqa.v_proj(x), n_kv_head)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    torch.testing.assert_close(out, gqa.out_proj(y.transpose(1, 2).reshape(2, 6, 16)))
    assert att.shape == (2, 4, 6, 6)
    n_params = sum(p.numel() for p in gqa.parameters())
    assert n_params == 2 * 16 * 16 + 2 * 16 * (16 // 4) * n_kv_head   # K and V shrink


def test_grouped_query_attention_with_every_head_is_multi_head_attention():
    torch.manual_seed(0)
    gqa = S.GroupedQueryAttention(16, 4, 4).double()
    mha = S.MultiHeadAttention(16, 4, bias=False).double()
    mha.load_state_dict(gqa.state_dict())
    x = torch.randn(2, 6, 16, dtype=f64)
    torch.testing.assert_close(gqa(x, is_causal=True)[0], mha(x, is_causal=True)[0])


def test_grouped_query_attention_with_rotary_rotates_queries_and_keys():
    torch.manual_seed(0)
    gqa = S.GroupedQueryAttention(16, 4, 2, rotary=True).double()
    x = torch.randn(1, 6, 16, dtype=f64)
    _, att = gqa(x)
    q = S.apply_rotary(gqa.heads(gqa.q_proj(x), 4))
    k = S.apply_rotary(gqa.heads(gqa.k_proj(x), 2)).repeat_interleave(2, dim=1)
    torch.testing.assert_close(att, torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(4), -1))


def test_rmsnorm_matches_pytorch():
    torch.manual_seed(0)
    ours, theirs = S.RMSNorm(12, eps=1e-6).double(), torch.nn.RMSNorm(12, eps=1e-6).double()
    with torch.no_grad():
        ours.weight.normal_()
        theirs.weight.copy_(ours.weight)
    x = torch.randn(3, 5, 12, dtype=f64) * 4 + 2
    torch.testing.assert_close(ours(x), theirs(x))


def test_swiglu_is_the_gated_formula_with_the_plain_mlps_parameters():
    torch.manual_seed(0)
    d = 48
    mlp = S.SwiGLU(d, 2 * 4 * d // 3).double()
    x = torch.randn(4, d, dtype=f64)
    want = (F.silu(x @ mlp.w.weight.T) * (x @ mlp.v.weight.T)) @ mlp.w2.weight.T
    torch.testing.assert_close(mlp(x), want)
    plain = S.MLP(d, 4 * d, bias=False)
    assert sum(p.numel() for p in mlp.parameters()) == sum(p.numel() for p in plain.parameters())


def test_sliding_window_mask():
    torch.testing.assert_close(S.sliding_window_mask(6, 6), S.causal_mask(6))
    m = S.sliding_window_mask(10, 3)
    assert m.sum().item() == 10 * 3 - 3 * 2 // 2     # the first rows see fewer than 3 keys
    assert m[9].nonzero().flatten().tolist() == [7, 8, 9]


@pytest.mark.parametrize("causal", [False, True])
def test_linear_attention_is_attention_with_the_feature_kernel(causal):
    """Summing over keys first gives what the n x n weights phi(q_i) . phi(k_j), normalised
    over the keys a query may read, give."""
    g = torch.Generator().manual_seed(0)
    q, k = (torch.randn(2, 3, 9, 8, generator=g, dtype=f64) for _ in range(2))
    v = torch.randn(2, 3, 9, 5, generator=g, dtype=f64)
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    weights = fq @ fk.transpose(-1, -2)                             # (..., L, S), positive
    if causal:
        weights = weights * S.causal_mask(9)
    want = (weights / weights.sum(-1, keepdim=True)) @ v
    torch.testing.assert_close(S.linear_attention(q, k, v, causal=causal, eps=0.0), want)
    assert (weights >= 0).all()


def test_strided_mask_and_window_reach_every_earlier_key_in_two_steps():
    """Child et al.'s two heads: a window of l and every l-th key. Through the two, one after
    the other, each query reaches every key before it."""
    L, stride = 36, 6
    strided, window = S.strided_mask(L, stride), S.sliding_window_mask(L, stride)
    assert strided[20].nonzero().flatten().tolist() == [2, 8, 14, 20]
    assert not (strided & ~S.causal_mask(L)).any()                    # causal
    two_steps = (window.double() @ strided.double()) > 0              # window, then stride
    assert torch.equal(two_steps, S.causal_mask(L))
    assert (strided | window).sum(-1).max() <= 2 * stride             # about 2 sqrt(L) keys
