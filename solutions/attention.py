"""The attention layer: score, normalise, average the values.

    out = softmax(score(q, k)) @ v

Shapes: queries q (..., L, d), keys k (..., S, d), values v (..., S, d_v); the weights are
(..., L, S) and the output (..., L, d_v). Any leading batch (and head) axes are carried along.
"""

import torch.nn.functional as F
from torch import nn

from .masking import causal_mask, masked_softmax
from .scoring import dot_score, scaled_dot_score


def attend(q, k, v, score=scaled_dot_score, mask=None):
    """Attention with any scoring function. Returns (output, weights)."""
    att = masked_softmax(score(q, k), mask)  # (..., L, S), each row sums to one
    return att @ v, att  # (..., L, d_v)


def general_attention(queries, inputs, score=dot_score, mask=None):
    """The general attention layer: query vectors attend over input vectors, which serve as
    both keys and values."""
    return attend(queries, inputs, inputs, score=score, mask=mask)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, dropout_p=0.0):
    """softmax(q k^T / sqrt(d) masked) v. Returns (output, weights).

    `mask` is boolean (True = may attend), broadcastable to (..., L, S). `is_causal` adds the
    causal mask. `dropout_p` drops attention weights (pass 0 in evaluation).
    """
    if is_causal:
        causal = causal_mask(q.size(-2), k.size(-2), device=q.device)
        mask = causal if mask is None else mask & causal
    att = masked_softmax(scaled_dot_score(q, k), mask)  # (..., L, S)
    if dropout_p > 0:
        att = F.dropout(att, p=dropout_p)
    return att @ v, att


class SelfAttention(nn.Module):
    """Single-head self-attention: queries, keys and values are three projections of one x."""

    def __init__(self, d_in: int, d_k: int, d_v: int | None = None, bias: bool = False):
        super().__init__()
        d_v = d_k if d_v is None else d_v
        self.W_q = nn.Linear(d_in, d_k, bias=bias)
        self.W_k = nn.Linear(d_in, d_k, bias=bias)
        self.W_v = nn.Linear(d_in, d_v, bias=bias)

    def forward(self, x, mask=None, is_causal=False):
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)  # (B, T, d_k), (B, T, d_k), (B, T, d_v)
        return scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
