"""Reference PyTorch implementations for the attention course.

One small module per concept; every function is batched, runs on any device and in float32 or
float64. Instructors' hidden tests compare student answers with these; students may read them
after the deadline. This package is left out of the student edition (see README.md).
"""

from .attention import SelfAttention, attend, general_attention, scaled_dot_product_attention
from .masking import causal_mask, masked_softmax, padding_mask
from .multihead import MultiHeadAttention
from .scoring import AdditiveScore, dot_score, scaled_dot_score

__all__ = [
    "AdditiveScore",
    "MultiHeadAttention",
    "SelfAttention",
    "attend",
    "causal_mask",
    "dot_score",
    "general_attention",
    "masked_softmax",
    "padding_mask",
    "scaled_dot_product_attention",
    "scaled_dot_score",
]
