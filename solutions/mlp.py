"""The position-wise feed-forward network of a Transformer block.

The same two-layer MLP is applied to every position separately: attention mixes information
between positions, the MLP then processes each position's result. The hidden width d_ff is
usually 4 * d_model.
"""

from torch import nn

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU}


class MLP(nn.Module):
    """linear1 -> activation -> dropout -> linear2. The names match `nn.TransformerEncoderLayer`
    so weights can be copied across."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu",
                 bias: bool = True):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.act = ACTIVATIONS[activation]()
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x):  # x: (..., d_model)
        h = self.dropout(self.act(self.linear1(x)))  # (..., d_ff)
        return self.linear2(h)  # (..., d_model)
