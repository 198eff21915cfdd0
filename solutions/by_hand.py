"""Self-attention the way it is done on paper ("AI by Hand" style).

On paper, tokens are COLUMNS: X is (d_in, n). The projections are Q = W_Q X, K = W_K X,
V = W_V X, the scores are K^T Q (row i = key i, column j = query j), each column is normalised
into weights A, and the outputs are the columns of Z = V A. PyTorch code uses the transposes of
all of these (tokens as rows); the numbers are the same.

Two simplifications keep the arithmetic small enough for pencil and paper when d_k = 3:
dividing by sqrt(3) ~ 1.73 becomes floor(x / 2), and e^x becomes 3^x.
"""

import torch


def project(W: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """W X: (d_out, d_in) @ (d_in, n) -> (d_out, n), one column per token."""
    return W @ X


def paper_scores(Q: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """K^T Q: (n_keys, n_queries); column j holds query j's score against every key."""
    return K.T @ Q


def floor_half(scores: torch.Tensor) -> torch.Tensor:
    """The paper's stand-in for dividing by sqrt(3): floor(x / 2)."""
    return torch.floor(scores / 2)


def power3_softmax_columns(scaled: torch.Tensor) -> torch.Tensor:
    """Normalise each column with 3^x instead of e^x: A[i, j] = 3^s_ij / sum_i 3^s_ij."""
    p = torch.pow(torch.full_like(scaled, 3.0), scaled)
    return p / p.sum(dim=0, keepdim=True)


def paper_attention(X, W_Q, W_K, W_V):
    """Every step of the paper computation: dict of Q, K, V, scores, scaled, A, Z."""
    Q, K, V = project(W_Q, X), project(W_K, X), project(W_V, X)
    scores = paper_scores(Q, K)
    scaled = floor_half(scores)
    A = power3_softmax_columns(scaled)
    return {"Q": Q, "K": K, "V": V, "scores": scores, "scaled": scaled, "A": A, "Z": V @ A}
