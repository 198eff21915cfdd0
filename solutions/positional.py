"""Positional encodings: attention is blind to order, so we add position information to x.

Self-attention treats its input as a set: permuting the tokens permutes the output the same
way. Adding a position-dependent vector to each token embedding breaks that symmetry.
"""

import torch
from torch import nn


def sinusoidal_encoding(n_pos: int, d_model: int, device=None, dtype=None) -> torch.Tensor:
    """(n_pos, d_model) table of Vaswani et al. (2017), "Attention Is All You Need":

        PE[pos, 2i]   = sin(pos / 10000^(2i / d_model))
        PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))

    Each pair of columns is a rotation at its own frequency, from one turn per 2*pi positions
    down to one per 10000*2*pi, so PE[pos + k] is a fixed linear function of PE[pos]: relative
    offsets are easy to read off. An odd d_model gets one more sine than cosine column.
    """
    dtype = torch.get_default_dtype() if dtype is None else dtype
    pos = torch.arange(n_pos, device=device, dtype=dtype).unsqueeze(1)  # (n_pos, 1)
    two_i = torch.arange(0, d_model, 2, device=device, dtype=dtype)  # (ceil(d_model / 2),)
    angle = pos / 10000 ** (two_i / d_model)  # (n_pos, ceil(d_model / 2))
    pe = torch.zeros(n_pos, d_model, device=device, dtype=dtype)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # one column fewer when d_model is odd
    return pe


def _check_length(T: int, max_len: int):
    if T > max_len:
        raise ValueError(f"sequence length {T} is longer than max_len={max_len}")


class SinusoidalPositionalEncoding(nn.Module):
    """x + PE[:T] with the fixed sinusoidal table; no parameters."""

    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        self.max_len = max_len
        # a buffer moves with .to(device); non-persistent: it is recomputed, not saved
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model), persistent=False)

    def forward(self, x):  # x: (B, T, D)
        _check_length(x.size(-2), self.max_len)
        return x + self.pe[: x.size(-2)].to(x.dtype)  # (T, D) broadcasts over the batch


class LearnedPositionalEncoding(nn.Module):
    """x + E[position] with one trained vector per position (as in BERT and GPT-2)."""

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.max_len = max_len
        self.emb = nn.Embedding(max_len, d_model)

    def forward(self, x):  # x: (B, T, D)
        T = x.size(-2)
        _check_length(T, self.max_len)
        positions = torch.arange(T, device=x.device)  # (T,)
        return x + self.emb(positions)  # (T, D) broadcasts over the batch
