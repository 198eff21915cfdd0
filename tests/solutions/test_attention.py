"""Scaled dot-product attention, masks and scoring functions against PyTorch and the formulas."""

import math

import pytest
import torch
import torch.nn.functional as F

from solutions import (
    AdditiveScore,
    SelfAttention,
    attend,
    causal_mask,
    dot_score,
    general_attention,
    masked_softmax,
    padding_mask,
    scaled_dot_product_attention,
    scaled_dot_score,
)

f64 = torch.float64

# (q shape, k shape, v shape): extra batch / head axes, L != S, d_v != d, unbatched
SHAPES = [
    ((2, 5, 4), (2, 7, 4), (2, 7, 3)),
    ((2, 3, 6, 8), (2, 3, 4, 8), (2, 3, 4, 5)),
    ((4, 6), (4, 6), (4, 6)),
    ((3, 2, 2, 1, 6), (3, 2, 2, 5, 6), (3, 2, 2, 5, 2)),
]
MASKS = ["none", "padding", "random", "is_causal", "causal_mask", "padding+is_causal"]


def _padding(q_shape, S, gen):
    """Key-padding mask over the first batch axis, shaped to broadcast against (..., L, S)."""
    B = q_shape[0] if len(q_shape) > 2 else 1
    lengths = torch.randint(1, S + 1, (B,), generator=gen)
    lengths[0] = max(1, S - 2)  # at least one sequence really is padded
    pad = padding_mask(lengths, S)  # (B, S)
    return pad.view(B, *[1] * (len(q_shape) - 2), S) if len(q_shape) > 2 else pad


def _inputs(shapes, gen, device="cpu"):
    return [torch.randn(*s, generator=gen, dtype=f64).to(device) for s in shapes]


def _masks(mode, q_shape, S, gen, device="cpu"):
    """(our mask, our is_causal, torch's boolean attn_mask) for one masking mode."""
    L = q_shape[-2]
    if mode == "none":
        return None, False, None
    if mode == "padding":
        pad = _padding(q_shape, S, gen).to(device)
        return pad, False, pad
    if mode == "random":
        m = torch.rand(*q_shape[:-1], S, generator=gen) < 0.5
        m[..., torch.randint(S, (), generator=gen)] = True  # every row keeps a key
        return m.to(device), False, m.to(device)
    causal = causal_mask(L, S, device=device)
    if mode == "is_causal":
        return None, True, causal
    if mode == "causal_mask":
        return causal, False, causal
    pad = _padding(q_shape, S, gen).to(device)  # padding+is_causal: key 0 is never padding
    return pad, True, pad & causal


def _reference_weights(q, k, mask):
    """softmax(q k^T / sqrt(d)) over the allowed keys, written out with exp / sum."""
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        s = s.masked_fill(~mask, -math.inf)
    e = torch.exp(s - s.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("mode", MASKS)
def test_sdpa_matches_torch(shapes, mode, gen, device="cpu"):
    q, k, v = _inputs(shapes, gen, device)
    for t in (q, k, v):
        t.requires_grad_(True)
    mask, is_causal, torch_mask = _masks(mode, q.shape, k.size(-2), gen, device)

    out, att = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=torch_mask)
    assert out.shape == (*q.shape[:-1], v.size(-1))
    assert att.shape == (*q.shape[:-1], k.size(-2))
    torch.testing.assert_close(out, expected)

    ref_att = _reference_weights(q, k, torch_mask)
    torch.testing.assert_close(att, ref_att)
    torch.testing.assert_close(out, ref_att @ v)
    if torch_mask is not None:
        assert (att.masked_select(~torch_mask.expand_as(att)) == 0).all()

    g = torch.randn(out.shape, generator=gen, dtype=f64).to(device)
    ours = torch.autograd.grad(out, (q, k, v), g)
    theirs = torch.autograd.grad(expected, (q, k, v), g)
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b)


def test_sdpa_matches_torch_on_device(gen, device):
    test_sdpa_matches_torch(SHAPES[1], "padding+is_causal", gen, device)


def test_sdpa_is_causal_and_mask_combine(gen):
    """A padding mask plus is_causal must hide both the future and the padding."""
    q, k, v = _inputs([(2, 5, 4)] * 3, gen)
    pad = padding_mask(torch.tensor([5, 3]))[:, None, :]  # (2, 1, 5)
    _, att = scaled_dot_product_attention(q, k, v, mask=pad, is_causal=True)
    allowed = pad & causal_mask(5)
    assert (att[~allowed.expand_as(att)] == 0).all()
    assert (att[allowed.expand_as(att)] > 0).all()


@pytest.mark.parametrize("mask", [False, True])
def test_sdpa_gradcheck(mask, gen):
    q, k, v = (t.requires_grad_(True) for t in _inputs([(2, 3, 4), (2, 5, 4), (2, 5, 3)], gen))
    m = padding_mask(torch.tensor([5, 2]))[:, None, :] if mask else None

    def f(q, k, v):
        return scaled_dot_product_attention(q, k, v, mask=m, is_causal=mask)

    assert torch.autograd.gradcheck(f, (q, k, v))


def test_sdpa_dropout_only_when_asked(gen):
    q, k, v = _inputs([(2, 4, 8)] * 3, gen)
    out0, att0 = scaled_dot_product_attention(q, k, v, dropout_p=0.0)
    out1, att1 = scaled_dot_product_attention(q, k, v, dropout_p=0.0)
    torch.testing.assert_close(out0, out1)
    _, att_drop = scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert (att_drop == 0).any() and not torch.equal(att_drop, att0)


# ---------------------------------------------------------------------------- masks


def test_causal_mask():
    expected = torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0]], dtype=torch.bool)
    assert torch.equal(causal_mask(3, 4), expected)
    assert torch.equal(causal_mask(3), expected[:, :3])
    assert causal_mask(2, device="meta").device.type == "meta"


def test_padding_mask():
    lengths = torch.tensor([3, 1, 4])
    expected = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(padding_mask(lengths), expected)
    assert padding_mask(lengths, max_len=6).shape == (3, 6)
    assert not padding_mask(lengths, max_len=6)[:, 4:].any()


def test_masked_softmax(gen):
    scores = torch.randn(2, 3, 5, generator=gen, dtype=f64)
    mask = torch.rand(2, 3, 5, generator=gen) < 0.6
    mask[..., 2] = True
    w = masked_softmax(scores, mask)
    assert (w[~mask] == 0).all()  # exactly zero, not just small
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, dtype=f64))
    torch.testing.assert_close(w, _reference_weights_from_scores(scores, mask))
    torch.testing.assert_close(masked_softmax(scores), torch.softmax(scores, -1))
    # along another axis
    w0 = masked_softmax(scores, mask, dim=-2)
    torch.testing.assert_close(w0.sum(-2)[mask.any(-2)], torch.ones_like(w0.sum(-2)[mask.any(-2)]))


def _reference_weights_from_scores(scores, mask):
    e = torch.where(mask, torch.exp(scores), 0.0)
    return e / e.sum(-1, keepdim=True)


def test_masked_softmax_fully_masked_row_is_zero_with_finite_gradient(gen):
    scores = torch.randn(2, 3, 4, generator=gen, dtype=f64, requires_grad=True)
    mask = torch.ones(2, 3, 4, dtype=torch.bool)
    mask[0, 1] = False  # query 1 of batch 0 may attend to nothing
    w = masked_softmax(scores, mask)
    assert not torch.isnan(w).any()
    assert (w[0, 1] == 0).all()
    torch.testing.assert_close(w[1].sum(-1), torch.ones(3, dtype=f64))
    (w * torch.randn(w.shape, generator=gen, dtype=f64)).sum().backward()
    assert torch.isfinite(scores.grad).all()
    assert (scores.grad[0, 1] == 0).all()
    assert scores.grad[0, 0].abs().sum() > 0


# ---------------------------------------------------------------------------- scores


def test_dot_and_scaled_dot_score(gen):
    q, k = _inputs([(2, 3, 6), (2, 4, 6)], gen)
    expected = torch.einsum("bld,bsd->bls", q, k)
    torch.testing.assert_close(dot_score(q, k), expected)
    torch.testing.assert_close(scaled_dot_score(q, k), expected / math.sqrt(6))


def test_additive_score_matches_loop(gen):
    score = AdditiveScore(d_query=3, d_key=5, d_hidden=4).double()
    q, k = _inputs([(2, 3, 3), (2, 6, 5)], gen)
    got = score(q, k)
    assert got.shape == (2, 3, 6)
    W_q, W_k, w = score.W_q.weight, score.W_k.weight, score.w.weight[0]
    expected = torch.empty(2, 3, 6, dtype=f64)
    for b in range(2):
        for i in range(3):
            for j in range(6):
                expected[b, i, j] = w @ torch.tanh(W_q @ q[b, i] + W_k @ k[b, j])
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("score_name", ["dot", "scaled", "additive"])
def test_attend_and_general_attention(score_name, gen):
    q, k, v = _inputs([(2, 3, 4), (2, 5, 4), (2, 5, 6)], gen)
    score = {"dot": dot_score, "scaled": scaled_dot_score,
             "additive": AdditiveScore(4, 4, 7).double()}[score_name]
    mask = padding_mask(torch.tensor([5, 2]))[:, None, :]
    out, att = attend(q, k, v, score=score, mask=mask)
    # written out: exp of the allowed scores, normalised per query
    with torch.no_grad():
        expected_att = _reference_weights_from_scores(score(q, k), mask)
    torch.testing.assert_close(att, expected_att)
    torch.testing.assert_close(out, expected_att @ v)
    assert (att[1, :, 2:] == 0).all()

    out_g, att_g = general_attention(q, k, score=score)
    expected_g = torch.softmax(score(q, k), dim=-1)
    torch.testing.assert_close(att_g, expected_g)
    torch.testing.assert_close(out_g, expected_g @ k)  # inputs are keys and values


def test_attend_defaults_to_scaled_dot(gen):
    q, k, v = _inputs([(2, 3, 4), (2, 5, 4), (2, 5, 6)], gen)
    torch.testing.assert_close(attend(q, k, v)[0], F.scaled_dot_product_attention(q, k, v))


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_matches_torch(bias, causal, gen):
    sa = SelfAttention(d_in=6, d_k=4, d_v=5, bias=bias).double()
    assert (sa.W_q.bias is not None) == bias
    x = torch.randn(3, 7, 6, generator=gen, dtype=f64)
    pad = padding_mask(torch.tensor([7, 4, 1]))[:, None, :]
    out, att = sa(x, mask=pad, is_causal=causal)
    allowed = pad & causal_mask(7) if causal else pad
    expected = F.scaled_dot_product_attention(sa.W_q(x), sa.W_k(x), sa.W_v(x), attn_mask=allowed)
    assert out.shape == (3, 7, 5) and att.shape == (3, 7, 7)
    torch.testing.assert_close(out, expected)
    assert (att[~allowed.expand_as(att)] == 0).all()
