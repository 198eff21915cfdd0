"""Linear attention (Katharopoulos et al. 2020, "Transformers are RNNs: Fast Autoregressive
Transformers with Linear Attention", Section 3.2).

Softmax attention weighs key j for query i by exp(q_i . k_j), which cannot be split into a part
of i and a part of j. Replace it by a kernel that can, phi(q_i) . phi(k_j), with the feature map
phi(x) = elu(x) + 1 (positive, so the weights are). Then the sum over keys can be done first:

    y_i = phi(q_i)^T (sum_j phi(k_j) v_j^T) / (phi(q_i)^T sum_j phi(k_j)),

a (d, d_v) matrix and a (d,) vector shared by every query: O(n d d_v) work and no n x n matrix.
With a causal mask the sums run over j <= i, as running (prefix) sums. It is a different
attention, not an approximation of the softmax one.
"""

import torch
import torch.nn.functional as F


def elu_feature(x: torch.Tensor) -> torch.Tensor:
    """The paper's feature map: elu(x) + 1, positive everywhere."""
    return F.elu(x) + 1


def linear_attention(q, k, v, causal: bool = False, eps: float = 1e-6):
    """q (..., L, d), k (..., S, d), v (..., S, d_v) -> (..., L, d_v). With `causal`, L = S
    and query i reads keys 0..i."""
    fq, fk = elu_feature(q), elu_feature(k)                     # (..., L, d), (..., S, d)
    if not causal:
        kv = fk.transpose(-2, -1) @ v                           # (..., d, d_v): one for all
        normaliser = fq @ fk.sum(-2).unsqueeze(-1)              # (..., L, 1)
        return (fq @ kv) / (normaliser + eps)
    kv = torch.cumsum(fk.unsqueeze(-1) * v.unsqueeze(-2), dim=-3)   # (..., S, d, d_v): prefixes
    y = (fq.unsqueeze(-2) @ kv).squeeze(-2)                     # (..., L, d_v)
    normaliser = (fq * torch.cumsum(fk, dim=-2)).sum(-1, keepdim=True)   # (..., L, 1)
    return y / (normaliser + eps)
