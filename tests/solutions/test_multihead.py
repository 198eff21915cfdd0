"""MultiHeadAttention against nn.MultiheadAttention(batch_first=True) with copied weights."""

import pytest
import torch
from torch import nn

from solutions import MultiHeadAttention, causal_mask, padding_mask

f64 = torch.float64
CONFIGS = [(8, 1), (8, 2), (12, 3), (16, 4)]  # (d_model, n_head)
CASES = ["self", "cross", "self_causal", "self_padding", "cross_padding", "self_padding_causal"]


def _setup(d_model, n_head, bias, case, gen, device="cpu"):
    mha = nn.MultiheadAttention(d_model, n_head, bias=bias, batch_first=True, dtype=f64)
    if bias:  # torch starts the biases at zero: make them count
        with torch.no_grad():
            mha.in_proj_bias.normal_(generator=gen)
            mha.out_proj.bias.normal_(generator=gen)
    mha = mha.to(device).eval()
    ours = MultiHeadAttention.from_torch(mha)
    B, L = 3, 5
    S = L if case.startswith("self") else 7
    x = torch.randn(B, L, d_model, generator=gen, dtype=f64).to(device).requires_grad_(True)
    mem = x if case.startswith("self") else (
        torch.randn(B, S, d_model, generator=gen, dtype=f64).to(device).requires_grad_(True))
    pad = padding_mask(torch.tensor([S, S - 2, 1]), S).to(device) if "padding" in case else None
    causal = "causal" in case
    return mha, ours, x, mem, pad, causal


def _run_both(mha, ours, x, mem, pad, causal):
    out, att = ours(x, mem, mem, mask=None if pad is None else pad[:, None, :], is_causal=causal)
    L, S = x.size(1), mem.size(1)
    # torch's boolean masks mean the opposite: True = may NOT attend
    t_out, t_att = mha(x, mem, mem,
                       key_padding_mask=None if pad is None else ~pad,
                       attn_mask=~causal_mask(L, S, device=x.device) if causal else None,
                       need_weights=True, average_attn_weights=True)
    return out, att, t_out, t_att


@pytest.mark.parametrize("d_model,n_head", CONFIGS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_matches_torch(d_model, n_head, bias, case, gen, device="cpu"):
    mha, ours, x, mem, pad, causal = _setup(d_model, n_head, bias, case, gen, device)
    out, att, t_out, t_att = _run_both(mha, ours, x, mem, pad, causal)
    assert out.shape == t_out.shape == x.shape
    assert att.shape == (x.size(0), n_head, x.size(1), mem.size(1))
    torch.testing.assert_close(out, t_out)
    torch.testing.assert_close(att.mean(dim=1), t_att)  # torch averages the heads
    if pad is not None:
        assert (att[:, :, :, ~pad[2]][2] == 0).all()  # padded keys get no weight in any head

    # the same gradients for the inputs and for every parameter
    g = torch.randn(out.shape, generator=gen, dtype=f64).to(device)
    inputs = (x,) if mem is x else (x, mem)
    ours_in = torch.autograd.grad(out, inputs, g, retain_graph=True)
    theirs_in = torch.autograd.grad(t_out, inputs, g, retain_graph=True)
    for a, b in zip(ours_in, theirs_in, strict=True):
        torch.testing.assert_close(a, b)
    (out * g).sum().backward()
    (t_out * g).sum().backward()
    q_w, k_w, v_w = mha.in_proj_weight.grad.chunk(3)
    torch.testing.assert_close(ours.q_proj.weight.grad, q_w)
    torch.testing.assert_close(ours.k_proj.weight.grad, k_w)
    torch.testing.assert_close(ours.v_proj.weight.grad, v_w)
    torch.testing.assert_close(ours.out_proj.weight.grad, mha.out_proj.weight.grad)
    if bias:
        q_b, k_b, v_b = mha.in_proj_bias.grad.chunk(3)
        torch.testing.assert_close(ours.q_proj.bias.grad, q_b)
        # k's bias adds the same amount to every score of a query row: its gradient is 0
        torch.testing.assert_close(ours.k_proj.bias.grad, k_b)
        torch.testing.assert_close(ours.v_proj.bias.grad, v_b)
        torch.testing.assert_close(ours.out_proj.bias.grad, mha.out_proj.bias.grad)


def test_matches_torch_on_device(gen, device):
    test_matches_torch(12, 3, True, "cross_padding", gen, device)


def test_from_torch_keeps_dtype_and_config():
    mha = nn.MultiheadAttention(12, 3, bias=False, dropout=0.1, batch_first=True, dtype=f64)
    ours = MultiHeadAttention.from_torch(mha)
    assert (ours.d_model, ours.n_head, ours.dropout) == (12, 3, 0.1)
    assert ours.q_proj.weight.dtype == f64 and ours.q_proj.bias is None


def test_dropout_only_in_training(gen):
    mha = MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(2, 6, 8, generator=gen)
    mha.eval()
    torch.testing.assert_close(mha(x)[0], mha(x)[0])
    mha.train()
    assert not torch.allclose(mha(x)[0], mha(x)[0])


def test_mask_shapes_broadcast(gen):
    """A (L, S) mask, a (B, 1, S) key-padding mask and a full (B, L, S) mask all work."""
    mha = MultiHeadAttention(8, 2).double()
    x = torch.randn(2, 4, 8, generator=gen, dtype=f64)
    pad = padding_mask(torch.tensor([4, 2]))
    full = pad[:, None, :].expand(2, 4, 4)
    torch.testing.assert_close(mha(x, mask=pad[:, None, :])[0], mha(x, mask=full)[0])
    torch.testing.assert_close(mha(x, mask=causal_mask(4))[0], mha(x, is_causal=True)[0])


def test_load_errors():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match="shape mismatch"):
        MultiHeadAttention(8, 2).load_from_torch(nn.MultiheadAttention(16, 2, batch_first=True))
    with pytest.raises(ValueError, match="shape mismatch"):
        MultiHeadAttention(8, 2).load_from_torch(nn.MultiheadAttention(8, 4, batch_first=True))
    with pytest.raises(ValueError, match="bias"):
        MultiHeadAttention(8, 2, bias=True).load_from_torch(nn.MultiheadAttention(8, 2, bias=False))
    with pytest.raises(ValueError):
        MultiHeadAttention(8, 2).load_from_torch(nn.MultiheadAttention(8, 2, kdim=4, vdim=4))
