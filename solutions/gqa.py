"""Grouped-query attention (Ainslie et al. 2023, "GQA: Training Generalized Multi-Query
Transformer Models from Multi-Head Checkpoints"), with multi-query attention (Shazeer 2019,
"Fast Transformer Decoding: One Write-Head is All You Need") as its one-group case.

Every query head keeps its own projection, but the keys and values have only n_kv_head heads,
each shared by n_head / n_kv_head query heads. The layer computes less, but above all its KV
cache, the keys and values kept for every generated token, shrinks by that factor. n_kv_head =
n_head is ordinary multi-head attention; n_kv_head = 1 is multi-query attention.
"""

import torch
from torch import nn

from .attention import scaled_dot_product_attention
from .rotary import apply_rotary


class GroupedQueryAttention(nn.Module):
    """forward(x (B, T, D), is_causal) -> (out (B, T, D), att (B, n_head, T, T)). With
    `rotary`, queries and keys are rotated by their positions (solutions.rotary) first."""

    def __init__(self, d_model: int, n_head: int, n_kv_head: int, bias: bool = False,
                 rotary: bool = False):
        super().__init__()
        if d_model % n_head or n_head % n_kv_head:
            raise ValueError(f"n_head={n_head} must divide d_model={d_model}, and "
                             f"n_kv_head={n_kv_head} must divide n_head")
        self.n_head, self.n_kv_head, self.d_head = n_head, n_kv_head, d_model // n_head
        self.rotary = rotary
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, n_kv_head * self.d_head, bias=bias)
        self.v_proj = nn.Linear(d_model, n_kv_head * self.d_head, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def heads(self, x: torch.Tensor, n: int) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, n, self.d_head).transpose(1, 2)     # (B, n, T, d_head)

    def forward(self, x, is_causal: bool = False):
        B, T, D = x.shape
        q = self.heads(self.q_proj(x), self.n_head)             # (B, n_head, T, d_head)
        k = self.heads(self.k_proj(x), self.n_kv_head)          # (B, n_kv_head, T, d_head)
        v = self.heads(self.v_proj(x), self.n_kv_head)
        if self.rotary:
            q, k = apply_rotary(q), apply_rotary(k)
        group = self.n_head // self.n_kv_head                   # query heads per key head
        k = k.repeat_interleave(group, dim=1)                   # (B, n_head, T, d_head)
        v = v.repeat_interleave(group, dim=1)
        y, att = scaled_dot_product_attention(q, k, v, is_causal=is_causal)
        return self.out_proj(y.transpose(1, 2).reshape(B, T, D)), att
