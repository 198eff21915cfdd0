"""Layer normalisation (Ba et al., 2016), written out.

Each position's feature vector is shifted to zero mean and scaled to unit variance, then given
a learned scale (weight) and shift (bias). Unlike batch norm, the statistics come from the one
vector itself, so it behaves the same in training and evaluation and for any batch size.
"""

import torch
from torch import nn


class LayerNorm(nn.Module):
    """Normalise over the last axis. Parameter names match `nn.LayerNorm`, so its state_dict
    loads directly."""

    def __init__(self, d_model: int, eps: float = 1e-5, bias: bool = True):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model)) if bias else None

    def forward(self, x):  # x: (..., d_model)
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        # biased variance (divide by d, not d - 1), like nn.LayerNorm
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # (..., 1)
        # eps inside the sqrt keeps a constant vector (var = 0) finite
        x_hat = (x - mean) / torch.sqrt(var + self.eps)
        y = x_hat * self.weight
        return y if self.bias is None else y + self.bias
