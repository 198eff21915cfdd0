"""Attention as a soft dictionary lookup.

A Python dict returns the value whose key equals the query exactly: every key gets weight 1 if
it matches and 0 otherwise. Attention relaxes this: every key gets a weight in [0, 1] that grows
with its similarity to the query, the weights sum to one, and the result is the weighted average
of the values. Because the weights change smoothly with the query, gradients flow through them.

Shapes: query (..., L, d), keys (..., S, d), values (..., S, d_v) -> output (..., L, d_v),
weights (..., L, S).
"""

import torch

from .scoring import dot_score


def hard_select(query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor):
    """Exact-match lookup written as attention. Returns (output, weights).

    A key gets weight 1 when all its features equal the query's, else 0. Like a dict, a query
    with no matching key gets nothing back (an all-zero output); unlike a dict, duplicate keys
    are all returned, summed. The weights are piecewise constant, so no gradient reaches the
    query or the keys: this is why attention uses a softmax instead.
    """
    # (..., L, 1, d) == (..., 1, S, d) -> (..., L, S, d); all features equal -> (..., L, S)
    match = (query.unsqueeze(-2) == keys.unsqueeze(-3)).all(dim=-1)
    weights = match.to(values.dtype)
    return weights @ values, weights  # (..., L, d_v)


def soft_select(query, keys, values, temperature: float = 1.0):
    """Soft lookup: weights = softmax(query . key / temperature) over the keys.

    As temperature -> 0 the softmax puts all its weight on the best-matching key (a hard
    argmax selection); as temperature grows the weights flatten towards a uniform average of
    all values. Returns (output, weights).
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    weights = torch.softmax(dot_score(query, keys) / temperature, dim=-1)  # (..., L, S)
    return weights @ values, weights  # (..., L, d_v)
