"""Multi-head attention: n_head attentions side by side on slices of d_model, then mixed.

Each head works in d_head = d_model / n_head dimensions, so several heads cost about as much as
one full-width head, yet each can learn to look for something different.
"""

import torch
from torch import nn

from .attention import scaled_dot_product_attention


class MultiHeadAttention(nn.Module):
    """Batch-first multi-head attention, parameter-compatible with `nn.MultiheadAttention`.

    forward(query (B, L, D), key (B, S, D), value (B, S, D), mask) -> (out (B, L, D),
    att (B, n_head, L, S)). `mask` is boolean, True = may attend, broadcastable to (B, L, S)
    (a key-padding mask is `pad[:, None, :]`); it is shared by all heads.
    """

    def __init__(self, d_model: int, n_head: int, bias: bool = True, dropout: float = 0.0):
        super().__init__()
        if d_model % n_head != 0:
            raise ValueError(f"d_model={d_model} is not divisible by n_head={n_head}")
        self.d_model, self.n_head, self.dropout = d_model, n_head, dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        # (B, T, D) -> (B, T, n_head, d_head) -> (B, n_head, T, d_head)
        return x.view(B, T, self.n_head, self.d_model // self.n_head).transpose(1, 2)

    def forward(self, query, key=None, value=None, mask=None, is_causal=False):
        key = query if key is None else key
        value = key if value is None else value
        B, L, D = query.shape
        q = self.split_heads(self.q_proj(query))  # (B, H, L, d_head)
        k = self.split_heads(self.k_proj(key))  # (B, H, S, d_head)
        v = self.split_heads(self.v_proj(value))  # (B, H, S, d_head)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (B, 1, L, S): the same mask for every head
        dropout_p = self.dropout if self.training else 0.0
        y, att = scaled_dot_product_attention(q, k, v, mask, is_causal, dropout_p)
        y = y.transpose(1, 2).reshape(B, L, D)  # heads side by side again: (B, L, D)
        return self.out_proj(y), att

    @torch.no_grad()
    def load_from_torch(self, mha: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy the weights of a `nn.MultiheadAttention` (same d_model and n_head) into self."""
        if (mha.embed_dim, mha.num_heads) != (self.d_model, self.n_head):
            raise ValueError(
                f"shape mismatch: torch module has embed_dim={mha.embed_dim}, "
                f"num_heads={mha.num_heads}; this one d_model={self.d_model}, n_head={self.n_head}"
            )
        if not mha._qkv_same_embed_dim or mha.bias_k is not None or mha.add_zero_attn:
            raise ValueError("only nn.MultiheadAttention with kdim = vdim = embed_dim, no bias_k/"
                             "bias_v and add_zero_attn=False can be loaded")
        if (mha.in_proj_bias is None) != (self.q_proj.bias is None):
            raise ValueError("bias mismatch between the torch module and this one")
        projections = (self.q_proj, self.k_proj, self.v_proj)
        for proj, w in zip(projections, mha.in_proj_weight.chunk(3), strict=True):
            proj.weight.copy_(w)
        if mha.in_proj_bias is not None:
            for proj, b in zip(projections, mha.in_proj_bias.chunk(3), strict=True):
                proj.bias.copy_(b)
            self.out_proj.bias.copy_(mha.out_proj.bias)
        self.out_proj.weight.copy_(mha.out_proj.weight)
        self.dropout = mha.dropout
        return self

    @classmethod
    def from_torch(cls, mha: nn.MultiheadAttention) -> "MultiHeadAttention":
        """A new module with the weights, dtype and device of `mha`."""
        p = mha.in_proj_weight
        module = cls(mha.embed_dim, mha.num_heads, bias=mha.in_proj_bias is not None)
        return module.to(device=p.device, dtype=p.dtype).load_from_torch(mha)
