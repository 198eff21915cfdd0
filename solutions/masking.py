"""Masks and the masked softmax.

Convention used everywhere in the course: a boolean mask is True where a query MAY attend to a
key, the same meaning as a boolean `attn_mask` in `F.scaled_dot_product_attention`. PyTorch's
`nn.MultiheadAttention` and `nn.Transformer*` layers use the opposite meaning (True = ignore) for
a boolean `attn_mask` and for `key_padding_mask`: give them ~mask.
"""

import torch


def causal_mask(L: int, S: int | None = None, device=None) -> torch.Tensor:
    """(L, S) boolean mask where query i may attend to keys 0..i (aligned top-left, like
    `is_causal=True` in PyTorch)."""
    S = L if S is None else S
    return torch.ones(L, S, dtype=torch.bool, device=device).tril()


def sliding_window_mask(L: int, window: int, device=None) -> torch.Tensor:
    """(L, L) boolean mask where query i may attend to keys i - window + 1 .. i: causal and
    local, each query seeing at most `window` keys (sliding-window attention, as in Longformer,
    Beltagy et al. 2020, and Mistral 7B, Jiang et al. 2023)."""
    i = torch.arange(L, device=device)
    offset = i[:, None] - i[None, :]  # (L, L): how far back key j lies from query i
    return (offset >= 0) & (offset < window)


def strided_mask(L: int, stride: int, device=None) -> torch.Tensor:
    """(L, L) boolean mask where query i may attend to keys i, i - stride, i - 2 stride, ...:
    the second head of the strided pattern of Child et al. (2019, "Generating Long Sequences
    with Sparse Transformers", Section 4), whose first head is `sliding_window_mask(L, stride)`.
    With stride near sqrt(L), each query reads about 2 sqrt(L) keys through the two heads."""
    i = torch.arange(L, device=device)
    offset = i[:, None] - i[None, :]  # (L, L)
    return (offset >= 0) & (offset % stride == 0)


def padding_mask(lengths: torch.Tensor, max_len: int | None = None) -> torch.Tensor:
    """(B, S) boolean mask, True for the first lengths[b] positions of sequence b.

    To use it as an attention mask over keys, add a query axis: `padding_mask(...)[:, None, :]`.
    """
    S = int(lengths.max()) if max_len is None else max_len
    positions = torch.arange(S, device=lengths.device)  # (S,)
    return positions < lengths[:, None]  # (B, S)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None, dim: int = -1):
    """Softmax along `dim` that gives masked-out positions exactly zero weight.

    Masked scores become -inf before the softmax, so the rest still sum to one. A row with
    nothing left to attend to would be 0/0; it gets all-zero weights instead of NaN.
    """
    if mask is None:
        return torch.softmax(scores, dim=dim)
    scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=dim)
    # rows that were fully masked are NaN: replace them with zeros (keeps gradients finite)
    return weights.masked_fill(~mask.any(dim=dim, keepdim=True), 0.0)
