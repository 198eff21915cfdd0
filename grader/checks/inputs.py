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


def strided(*tensors):
    """The same values in non-contiguous views: every other entry of a buffer twice as wide,
    with the last two axes stored the other way round (column by column). `.view` on such a
    view fails wherever it would merge axes, as it does on a transposed or sliced input a
    caller may hand over: code that assumes a contiguous input meets that layout. One tensor
    gives one view; several give a tuple; anything else passes through."""
    def view(t):
        if not isinstance(t, torch.Tensor) or t.dim() == 0:
            return t
        swapped = t.transpose(-2, -1) if t.dim() >= 2 else t
        buffer = t.new_zeros(*swapped.shape, 2)
        buffer[..., 0] = swapped
        stored = buffer[..., 0]
        return stored.transpose(-2, -1) if t.dim() >= 2 else stored

    views = tuple(view(t) for t in tensors)
    return views[0] if len(views) == 1 else views
