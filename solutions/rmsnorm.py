"""RMSNorm (Zhang and Sennrich 2019, "Root Mean Square Layer Normalization"): LayerNorm without
the mean. Each token is divided by the root mean square of its features and scaled by a learned
gain; nothing is subtracted and there is no bias. LLaMA and most recent models use it."""

import torch
from torch import nn


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x^2) + eps) * weight, over the last axis; parameter-compatible with
    `nn.RMSNorm(d, eps=eps)`."""

    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):  # x: (..., d)
        rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)   # (..., 1)
        return x / rms * self.weight
