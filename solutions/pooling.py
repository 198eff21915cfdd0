"""Attention pooling as Nadaraya-Watson kernel regression (1964).

To predict y at a new x, average the training targets y_i, weighting each by how close its x_i
is to x. With a Gaussian kernel the weights are

    w_i(x) = exp(-(x - x_i)^2 / (2 h^2)) / sum_j exp(-(x - x_j)^2 / (2 h^2))
           = softmax_i(-(x - x_i)^2 / (2 h^2)),

which is attention with x as the query, the x_i as keys, the y_i as values and a (negative
squared distance) scoring function. The bandwidth h plays the role of a temperature: a small h
looks only at the nearest points, a large h averages everything.

Inputs are scalars per position: x_query (..., L), x_keys (..., S), y_values (..., S), or
(..., S, d_y) for vector targets. A plain 1-D tensor (n,) is one unbatched sequence.
"""

import torch


def gaussian_kernel_weights(x_query, x_keys, bandwidth: float = 1.0) -> torch.Tensor:
    """(..., L, S) weights, each row a softmax over keys, so it sums to one."""
    if not bandwidth > 0:
        raise ValueError(f"bandwidth must be > 0, got {bandwidth}")
    diff = x_query.unsqueeze(-1) - x_keys.unsqueeze(-2)  # (..., L, 1) - (..., 1, S) -> (..., L, S)
    # softmax rather than exp / sum: subtracting the row max avoids 0/0 when every point is
    # far away relative to the bandwidth
    return torch.softmax(-(diff**2) / (2 * bandwidth**2), dim=-1)


def nadaraya_watson(x_query, x_keys, y_values, bandwidth: float = 1.0):
    """Kernel-weighted average of y_values at each query point. Returns (prediction, weights).

    prediction is (..., L) for scalar targets y_values (..., S), (..., L, d_y) for vector ones.
    """
    weights = gaussian_kernel_weights(x_query, x_keys, bandwidth)  # (..., L, S)
    if y_values.dim() == x_keys.dim():  # scalar targets: treat as (..., S, 1) and squeeze back
        return (weights @ y_values.unsqueeze(-1)).squeeze(-1), weights
    return weights @ y_values, weights
