"""Random inputs for hidden tests: the student's code and the reference see the same ones."""

from __future__ import annotations

import torch


def random_qkv(batch, L, S, d, d_v, dtype=torch.float64, generator=None, device="cpu"):
    """Queries (*batch, L, d), keys (*batch, S, d), values (*batch, S, d_v)."""
    def randn(*shape):
        return torch.randn(*shape, generator=generator, dtype=dtype).to(device)
    return randn(*batch, L, d), randn(*batch, S, d), randn(*batch, S, d_v)


def random_mask(batch, L, S, generator=None, device="cpu", p_keep=0.6):
    """A boolean mask (*batch, L, S), True = may attend, with at least one True per row."""
    keep = torch.rand(*batch, L, S, generator=generator) < p_keep
    first = torch.randint(S, (*batch, L, 1), generator=generator)
    keep.scatter_(-1, first, True)  # every query may attend to something
    return keep.to(device)


def random_padding(B, S, generator=None, device="cpu"):
    """A key-padding mask (B, 1, S): sequence b has a random length between 1 and S."""
    lengths = torch.randint(1, S + 1, (B,), generator=generator)
    return (torch.arange(S) < lengths[:, None])[:, None, :].to(device)
