"""Sinusoidal and learned positional encodings."""

import math

import pytest
import torch

from solutions import LearnedPositionalEncoding, SinusoidalPositionalEncoding, sinusoidal_encoding

f64 = torch.float64


@pytest.mark.parametrize("d_model", [1, 4, 5, 8, 11])
def test_sinusoidal_values(d_model):
    n_pos = 12
    pe = sinusoidal_encoding(n_pos, d_model, dtype=f64)
    assert pe.shape == (n_pos, d_model) and pe.dtype == f64
    for pos in range(n_pos):
        for j in range(d_model):
            i = j // 2
            angle = pos / 10000 ** (2 * i / d_model)
            expected = math.sin(angle) if j % 2 == 0 else math.cos(angle)
            assert pe[pos, j].item() == pytest.approx(expected, abs=1e-12)


def test_sinusoidal_dtype_device_and_default():
    assert sinusoidal_encoding(3, 4).dtype == torch.get_default_dtype()
    assert sinusoidal_encoding(3, 4, dtype=torch.float32).dtype == torch.float32
    assert sinusoidal_encoding(3, 4, device="meta").device.type == "meta"
    pe = sinusoidal_encoding(3, 4)
    torch.testing.assert_close(pe[0], torch.tensor([0.0, 1.0, 0.0, 1.0]))  # position 0


def test_sinusoidal_dot_product_depends_only_on_offset():
    """PE[p] . PE[q] = sum_i cos((p - q) w_i): a function of p - q alone."""
    pe = sinusoidal_encoding(40, 16, dtype=f64)
    gram = pe @ pe.T
    for offset in (1, 3, 7):
        diag = torch.diagonal(gram, offset)
        torch.testing.assert_close(diag, diag[0].expand_as(diag))
    assert not torch.allclose(gram.diagonal(1)[0], gram.diagonal(3)[0])


def test_sinusoidal_module(gen):
    module = SinusoidalPositionalEncoding(d_model=6, max_len=10)
    assert list(module.parameters()) == [] and "pe" not in module.state_dict()
    x = torch.randn(2, 7, 6, generator=gen)
    torch.testing.assert_close(module(x), x + sinusoidal_encoding(7, 6))
    module = module.double()
    assert module.pe.dtype == f64 and module(x.double()).dtype == f64
    with pytest.raises(ValueError, match="max_len"):
        module(torch.randn(1, 11, 6))


def test_learned_module(gen):
    module = LearnedPositionalEncoding(max_len=8, d_model=4)
    x = torch.randn(3, 5, 4, generator=gen, requires_grad=True)
    y = module(x)
    torch.testing.assert_close(y, x + module.emb.weight[:5])
    y.sum().backward()
    grad = module.emb.weight.grad
    torch.testing.assert_close(grad[:5], torch.full((5, 4), 3.0))  # each position, 3 sequences
    assert (grad[5:] == 0).all()  # positions never used get nothing
    with pytest.raises(ValueError, match="max_len"):
        module(torch.randn(1, 9, 4))
