"""Scoring functions: how well each query matches each key.

All take queries (..., L, d_q) and keys (..., S, d_k) and return scores (..., L, S).
"""

import math

import torch
from torch import nn


def dot_score(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """q . k for every query-key pair (needs d_q == d_k)."""
    return q @ k.transpose(-2, -1)  # (..., L, d) @ (..., d, S) -> (..., L, S)


def scaled_dot_score(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """q . k / sqrt(d): for random q, k with unit-variance entries, q . k has variance d, so
    dividing by sqrt(d) keeps the scores (and the softmax) out of saturation as d grows."""
    return dot_score(q, k) / math.sqrt(q.size(-1))


class AdditiveScore(nn.Module):
    """Additive (Bahdanau) scoring: score(q, k) = w . tanh(W_q q + W_k k).

    A one-hidden-layer MLP on the pair, so queries and keys may have different sizes.
    """

    def __init__(self, d_query: int, d_key: int, d_hidden: int):
        super().__init__()
        self.W_q = nn.Linear(d_query, d_hidden, bias=False)
        self.W_k = nn.Linear(d_key, d_hidden, bias=False)
        self.w = nn.Linear(d_hidden, 1, bias=False)

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        # (..., L, 1, h) + (..., 1, S, h) -> (..., L, S, h): every query meets every key
        hidden = torch.tanh(self.W_q(q).unsqueeze(-2) + self.W_k(k).unsqueeze(-3))
        return self.w(hidden).squeeze(-1)  # (..., L, S)
