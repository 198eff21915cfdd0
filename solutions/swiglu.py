"""The gated MLP of recent Transformers (Shazeer 2020, "GLU Variants Improve Transformer"):
FFN_SwiGLU(x) = (Swish(x W) * x V) W2, where a second projection V gates the activated one,
feature by feature. With three matrices instead of two, a hidden width of 2/3 of the usual
4 * d_model keeps the parameter count of the plain MLP (the paper's Section 2; LLaMA does this)."""

import torch.nn.functional as F
from torch import nn


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int, bias: bool = False):
        super().__init__()
        self.w = nn.Linear(d_model, d_ff, bias=bias)            # activated
        self.v = nn.Linear(d_model, d_ff, bias=bias)            # the gate
        self.w2 = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x):  # x: (..., d_model)
        return self.w2(F.silu(self.w(x)) * self.v(x))           # Swish with beta = 1 is SiLU
