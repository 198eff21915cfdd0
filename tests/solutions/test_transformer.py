"""Transformer blocks against PyTorch's encoder / decoder layers with copied weights."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from solutions import (
    DecoderBlock,
    DecoderOnlyLM,
    TransformerBlock,
    TransformerEncoder,
    causal_mask,
    padding_mask,
)

f64 = torch.float64
D, H, FF = 8, 2, 16


def _randomize_(module, gen):
    """Random values for every parameter: torch initialises biases to 0 and norms to (1, 0),
    and nn.TransformerEncoder starts all layers as copies; neither would catch a mix-up."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    return module


def _x(B, T, gen):
    return torch.randn(B, T, D, generator=gen, dtype=f64).requires_grad_(True)


def _check(ours, theirs, inputs, gen):
    """Same outputs and same gradients w.r.t. the inputs."""
    torch.testing.assert_close(ours, theirs)
    g = torch.randn(ours.shape, generator=gen, dtype=f64)
    for a, b in zip(torch.autograd.grad(ours, inputs, g), torch.autograd.grad(theirs, inputs, g),
                    strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("masks", ["none", "padding", "causal", "padding+causal"])
def test_block_matches_encoder_layer(norm_first, activation, masks, gen):
    layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.1, activation=activation,
                                       norm_first=norm_first, batch_first=True, dtype=f64)
    layer = _randomize_(layer, gen).eval()  # eval: dropout off in both
    block = TransformerBlock.from_torch(layer).eval()
    assert block.norm_first == norm_first and block.mlp.activation == activation
    B, T = 3, 6
    x = _x(B, T, gen)
    pad = padding_mask(torch.tensor([6, 4, 1]), T) if "padding" in masks else None
    causal = "causal" in masks
    ours = block(x, mask=None if pad is None else pad[:, None, :], is_causal=causal)
    theirs = layer(x, src_mask=~causal_mask(T) if causal else None,
                   src_key_padding_mask=None if pad is None else ~pad, is_causal=causal)
    _check(ours, theirs, (x,), gen)



def test_torch_layers_read_masks_the_other_way(gen):
    """PyTorch's layers take True = blocked: a course mask (True = may attend) goes in as ~mask;
    passed unchanged, it hides the real tokens and lets the padding through."""
    layer = nn.TransformerEncoderLayer(D, H, FF, batch_first=True, dtype=f64)
    layer = _randomize_(layer, gen).eval()
    block = TransformerBlock.from_torch(layer).eval()
    x = _x(2, 6, gen).detach()
    pad = padding_mask(torch.tensor([5, 3]), 6)  # (B, S) True = a real token
    junk = x.masked_fill(~pad[..., None], 100.0)  # only the padding changed
    ours = block(x, mask=pad[:, None, :])
    torch.testing.assert_close(ours, layer(x, src_key_padding_mask=~pad))
    torch.testing.assert_close(block(junk, mask=pad[:, None, :])[pad], ours[pad])
    wrong, wrong_junk = layer(x, src_key_padding_mask=pad), layer(junk, src_key_padding_mask=pad)
    assert not torch.allclose(wrong_junk[pad], wrong[pad])  # the real tokens now see the padding

def test_block_without_bias(gen):
    layer = nn.TransformerEncoderLayer(D, H, FF, bias=False, batch_first=True, dtype=f64)
    layer = _randomize_(layer, gen).eval()
    block = TransformerBlock.from_torch(layer).eval()  # a new module is in training mode
    assert block.norm1.bias is None and block.mlp.linear1.bias is None
    x = _x(2, 5, gen)
    _check(block(x), layer(x), (x,), gen)


def test_block_dropout_in_training(gen):
    block = TransformerBlock(D, H, FF, dropout=0.3)
    x = torch.randn(2, 5, D, generator=gen)
    block.eval()
    torch.testing.assert_close(block(x), block(x))
    block.train()
    assert not torch.allclose(block(x), block(x))


def test_block_is_causal(gen):
    """With is_causal, changing a later token leaves earlier outputs alone."""
    block = TransformerBlock(D, H, FF, norm_first=True).double().eval()
    x = torch.randn(1, 6, D, generator=gen, dtype=f64)
    x2 = x.clone()
    x2[:, 4] += torch.randn(D, generator=gen, dtype=f64)  # not a constant: LayerNorm ignores
    y, y2 = block(x, is_causal=True), block(x2, is_causal=True)
    torch.testing.assert_close(y[:, :4], y2[:, :4])
    assert not torch.allclose(y[:, 4:], y2[:, 4:])
    assert not torch.allclose(block(x)[:, :4], block(x2)[:, :4])  # without it, they change


def test_load_errors():
    layer = nn.TransformerEncoderLayer(D, H, FF, activation=F.silu, batch_first=True)
    with pytest.raises(ValueError, match="activation"):
        TransformerBlock.from_torch(layer)
    approx = nn.TransformerEncoderLayer(D, H, FF, activation=nn.GELU(approximate="tanh"))
    with pytest.raises(ValueError, match="activation"):
        TransformerBlock.from_torch(approx)
    with pytest.raises(ValueError, match="norm_first"):
        TransformerBlock(D, H, FF, norm_first=False).load_from_torch(
            nn.TransformerEncoderLayer(D, H, FF, norm_first=True, batch_first=True))
    with pytest.raises(ValueError):
        TransformerBlock(D, H, FF).load_from_torch(
            nn.TransformerEncoderLayer(D, H, 2 * FF, batch_first=True))
    with pytest.raises(ValueError, match="activation"):
        TransformerBlock(D, H, FF, activation="tanh")


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("final_norm", [False, True])
def test_encoder_matches_torch(norm_first, final_norm, gen):
    layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.1, norm_first=norm_first,
                                       batch_first=True, dtype=f64)
    norm = nn.LayerNorm(D, dtype=f64) if final_norm else None
    encoder = nn.TransformerEncoder(layer, num_layers=3, norm=norm, enable_nested_tensor=False)
    encoder = _randomize_(encoder, gen).eval()
    ours = TransformerEncoder.from_torch(encoder).eval()
    assert len(ours.layers) == 3 and (ours.norm is not None) == final_norm
    x = _x(3, 6, gen)
    pad = padding_mask(torch.tensor([6, 3, 5]), 6)
    _check(ours(x, mask=pad[:, None, :]), encoder(x, src_key_padding_mask=~pad), (x,), gen)
    causal = ~causal_mask(6)
    _check(ours(x, is_causal=True), encoder(x, mask=causal, is_causal=True), (x,), gen)


def test_encoder_final_norm_default():
    assert TransformerEncoder(2, D, H, FF, norm_first=True).norm is not None
    assert TransformerEncoder(2, D, H, FF, norm_first=False).norm is None
    assert TransformerEncoder(2, D, H, FF, norm_first=False, final_norm=True).norm is not None


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_decoder_block_matches_torch(norm_first, activation, gen):
    layer = nn.TransformerDecoderLayer(D, H, FF, dropout=0.1, activation=activation,
                                       norm_first=norm_first, batch_first=True, dtype=f64)
    layer = _randomize_(layer, gen).eval()
    block = DecoderBlock.from_torch(layer).eval()
    B, T, S = 3, 5, 7
    x, memory = _x(B, T, gen), _x(B, S, gen)
    mem_pad = padding_mask(torch.tensor([7, 2, 4]), S)
    tgt_pad = padding_mask(torch.tensor([5, 5, 3]), T)

    ours = block(x, memory, memory_mask=mem_pad[:, None, :])
    theirs = layer(x, memory, tgt_mask=~causal_mask(T), tgt_is_causal=True,
                   memory_key_padding_mask=~mem_pad)
    _check(ours, theirs, (x, memory), gen)

    # an extra target padding mask is combined with the causal one
    ours = block(x, memory, mask=tgt_pad[:, None, :], memory_mask=mem_pad[:, None, :])
    theirs = layer(x, memory, tgt_mask=~causal_mask(T), tgt_key_padding_mask=~tgt_pad,
                   memory_key_padding_mask=~mem_pad)
    _check(ours, theirs, (x, memory), gen)

    # causal=False: bidirectional self-attention
    _check(block(x, memory, causal=False), layer(x, memory), (x, memory), gen)


def test_decoder_block_ignores_padded_memory(gen):
    block = DecoderBlock(D, H, FF).double().eval()
    x, memory = _x(2, 4, gen).detach(), _x(2, 6, gen).detach()
    pad = padding_mask(torch.tensor([6, 3]), 6)
    memory2 = memory.clone()
    memory2[1, 3:] = 100.0  # junk where the memory is padding
    y = block(x, memory, memory_mask=pad[:, None, :])
    torch.testing.assert_close(y, block(x, memory2, memory_mask=pad[:, None, :]))


# ---------------------------------------------------------------------- decoder-only LM


def _lm():
    return DecoderOnlyLM(vocab=11, d_model=16, n_head=2, d_ff=32, n_layer=2, max_len=8)


def test_lm_shapes_and_causality(gen):
    lm = _lm().eval()
    idx = torch.randint(0, 11, (2, 6), generator=gen)
    logits = lm(idx)
    assert logits.shape == (2, 6, 11)
    idx2 = idx.clone()
    idx2[:, 3] = (idx2[:, 3] + 1) % 11
    logits2 = lm(idx2)
    torch.testing.assert_close(logits[:, :3], logits2[:, :3])  # the past can't see the future
    assert not torch.allclose(logits[:, 3:], logits2[:, 3:])
    with pytest.raises(ValueError, match="max_len"):
        lm(torch.zeros(1, 9, dtype=torch.long))


def test_lm_greedy_generate(gen):
    lm = _lm().eval()
    idx = torch.randint(0, 11, (2, 3), generator=gen)
    out = lm.greedy_generate(idx, n_new=7)  # longer than max_len: the context is cropped
    assert out.shape == (2, 10) and torch.equal(out[:, :3], idx)
    for t in range(3, 10):
        context = out[:, max(0, t - 8):t]
        assert torch.equal(out[:, t], lm(context)[:, -1].argmax(-1))


def test_lm_overfits_a_batch(gen, train_losses):
    lm = _lm()
    seq = torch.randint(0, 11, (4, 8), generator=gen)

    def loss():
        logits = lm(seq[:, :-1])
        return F.cross_entropy(logits.reshape(-1, 11), seq[:, 1:].reshape(-1))

    losses = train_losses(lm.parameters(), loss)
    assert losses[-1] < 0.3 * losses[0]
