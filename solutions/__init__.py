"""Reference PyTorch implementations for the attention course.

One small module per concept; every function is batched, runs on any device and in float32 or
float64. Instructors' hidden tests compare student answers with these; students may read them
after the deadline. This package is left out of the student edition (see README.md).
"""

from .attention import SelfAttention, attend, general_attention, scaled_dot_product_attention
from .captioning import CaptionDecoder, GridEncoder
from .gqa import GroupedQueryAttention
from .layernorm import LayerNorm
from .linear_attention import linear_attention
from .masking import causal_mask, masked_softmax, padding_mask, sliding_window_mask, strided_mask
from .mlp import MLP
from .multihead import MultiHeadAttention
from .pooling import gaussian_kernel_weights, nadaraya_watson
from .positional import (
    LearnedPositionalEncoding,
    SinusoidalPositionalEncoding,
    sinusoidal_encoding,
)
from .rmsnorm import RMSNorm
from .rnn import AttentionDecoder, Encoder, Seq2Seq
from .rotary import apply_rotary, rotary_angles
from .scoring import AdditiveScore, dot_score, scaled_dot_score
from .select import hard_select, soft_select
from .swiglu import SwiGLU
from .transformer import DecoderBlock, DecoderOnlyLM, TransformerBlock, TransformerEncoder

__all__ = [
    "AdditiveScore",
    "AttentionDecoder",
    "CaptionDecoder",
    "DecoderBlock",
    "DecoderOnlyLM",
    "Encoder",
    "GridEncoder",
    "GroupedQueryAttention",
    "LayerNorm",
    "LearnedPositionalEncoding",
    "MLP",
    "MultiHeadAttention",
    "RMSNorm",
    "SelfAttention",
    "Seq2Seq",
    "SinusoidalPositionalEncoding",
    "SwiGLU",
    "TransformerBlock",
    "TransformerEncoder",
    "apply_rotary",
    "attend",
    "causal_mask",
    "dot_score",
    "gaussian_kernel_weights",
    "general_attention",
    "hard_select",
    "linear_attention",
    "masked_softmax",
    "nadaraya_watson",
    "padding_mask",
    "rotary_angles",
    "scaled_dot_product_attention",
    "scaled_dot_score",
    "sinusoidal_encoding",
    "sliding_window_mask",
    "soft_select",
    "strided_mask",
]
