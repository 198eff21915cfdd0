"""Rotary position embeddings (Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary
Position Embedding", Section 3.4).

Instead of adding a position vector to the token, rotate the query and the key: split each into
pairs of coordinates and turn pair i of the vector at position m by the angle m * theta_i, with
theta_i = base^(-2i/d) (the paper's Eq. 15, base 10000). A rotation by m and one by n leave a
dot product depending on the difference only: (R_m q) . (R_n k) = q . (R_(n-m) k). So the scores
see how far apart two tokens are, not where they stand. The pairs are neighbouring coordinates,
(x0, x1), (x2, x3), ..., as in the paper's Eq. 34.
"""

import torch


def rotary_angles(positions: torch.Tensor, d: int, base: float = 10000.0) -> torch.Tensor:
    """(T,) positions -> (T, d/2) angles m * theta_i, in the positions' dtype (a float)."""
    i = torch.arange(d // 2, device=positions.device, dtype=positions.dtype)
    theta = base ** (-2 * i / d)                                 # (d/2,): fast to slow turns
    return positions[:, None] * theta[None, :]


def apply_rotary(x: torch.Tensor, positions: torch.Tensor | None = None,
                 base: float = 10000.0) -> torch.Tensor:
    """Rotate x (..., T, d), d even: pair i of the vector at position positions[t] (by default
    t) turns by positions[t] * theta_i. Works for queries and keys alike, any leading axes."""
    T, d = x.shape[-2:]
    if d % 2:
        raise ValueError(f"rotary embeddings rotate pairs of coordinates: d={d} is odd")
    if positions is None:
        positions = torch.arange(T, device=x.device)
    angle = rotary_angles(positions.to(x.dtype), d, base)      # (T, d/2)
    cos, sin = angle.cos(), angle.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]                         # (..., T, d/2) each
    rotated = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)  # (..., T, d/2, 2)
    return rotated.flatten(-2)                                  # (..., T, d), pairs back in place
