"""The capstone's model: a small GPT of today's shape, with a KV cache for generation.

Each block is pre-norm with RMSNorm (Zhang and Sennrich 2019), causal grouped-query attention
(Ainslie et al. 2023) whose queries and keys are turned by rotary position embeddings (Su et al.,
RoFormer, Section 3.4) and a SwiGLU MLP (Shazeer 2020). There are no position vectors: the
rotations carry the positions. `forward(idx, k_cache, v_cache)` reads new tokens after the t
positions the caches already hold and returns the logits and the caches extended by them: every
layer's keys (rotated) and values, stacked, (n_layer, B, n_kv_head, t, d_head) each. Only tensors
go in and out, so that generation can feed one token a step.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from .gqa import GroupedQueryAttention
from .rotary import apply_rotary


def rotary_at(x: torch.Tensor, start: int = 0) -> torch.Tensor:
    """Rotate x (..., T, d) as positions start, ..., start + T - 1 (solutions.rotary's pairs)."""
    positions = torch.arange(start, start + x.size(-2), device=x.device)
    return apply_rotary(x, positions)


def cached_attention(q, k, v, k_past=None, v_past=None, *, group_tiled: bool = False,
                     offset_rotary: bool = True, offset_mask: bool = True):
    """q (B, n_head, T, d), k and v (B, n_kv_head, T, d) of T new positions, not yet rotated;
    k_past, v_past: the t earlier positions' (B, n_kv_head, t, d) or None. Returns
    (y (B, n_head, T, d), k, v of all t + T positions). The flags switch on the mistakes that
    solutions.mistakes reproduces."""
    start = 0 if k_past is None else k_past.size(-2)
    at = start if offset_rotary else 0
    q, k = rotary_at(q, at), rotary_at(k, at)
    if k_past is not None:
        k = torch.cat([k_past, k], dim=-2)                        # (B, n_kv_head, t + T, d)
        v = torch.cat([v_past, v], dim=-2)
    group = q.size(1) // k.size(1)                                # query heads per key head
    if group_tiled:
        k_all, v_all = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)
    else:
        k_all, v_all = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    T, S = q.size(-2), k.size(-2)
    scores = q @ k_all.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, n_head, T, S)
    allowed = torch.ones(T, S, dtype=torch.bool, device=q.device).tril(S - T if offset_mask else 0)
    att = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    return att @ v_all, k, v


class CausalSelfAttention(GroupedQueryAttention):
    """forward(x (B, T, D), k_past, v_past) -> (y (B, T, D), k, v of all positions so far): the
    projections and heads of solutions.GroupedQueryAttention (no biases), read with a cache."""

    def __init__(self, d_model: int, n_head: int, n_kv_head: int):
        super().__init__(d_model, n_head, n_kv_head, bias=False)
        if self.d_head % 2:
            raise ValueError(f"rotary embeddings turn pairs: the heads' size {self.d_head} is odd")

    def forward(self, x, k_past=None, v_past=None, **mistake):
        B, T, D = x.shape
        q = self.heads(self.q_proj(x), self.n_head)
        k = self.heads(self.k_proj(x), self.n_kv_head)
        v = self.heads(self.v_proj(x), self.n_kv_head)
        y, k, v = cached_attention(q, k, v, k_past, v_past, **mistake)  # y (B, n_head, T, d_head)
        return self.out_proj(y.transpose(1, 2).reshape(B, T, D)), k, v


class SwiGLUMLP(nn.Module):
    """down(silu(gate(x)) * up(x)), without biases."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.gate = nn.Linear(d_model, d_ff, bias=False)
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    """Pre-norm: x + attention(norm1(x)), then + mlp(norm2(.)); returns (x, k, v)."""

    def __init__(self, d_model: int, n_head: int, n_kv_head: int, d_ff: int):
        super().__init__()
        self.norm1 = nn.RMSNorm(d_model, eps=1e-6)
        self.attn = CausalSelfAttention(d_model, n_head, n_kv_head)
        self.norm2 = nn.RMSNorm(d_model, eps=1e-6)
        self.mlp = SwiGLUMLP(d_model, d_ff)

    def forward(self, x, k_past=None, v_past=None, **mistake):
        a, k, v = self.attn(self.norm1(x), k_past, v_past, **mistake)
        x = x + a
        return x + self.mlp(self.norm2(x)), k, v


class TinyGPT(nn.Module):
    """forward(idx (B, T), k_cache, v_cache) -> (logits (B, T, vocab), k_cache, v_cache), the
    caches (n_layer, B, n_kv_head, t, d_head): the t positions read before, then these T."""

    def __init__(self, vocab: int, d_model: int, n_head: int, n_kv_head: int, d_ff: int,
                 n_layer: int):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_head, n_kv_head, d_ff)
                                    for _ in range(n_layer))
        self.norm = nn.RMSNorm(d_model, eps=1e-6)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx, k_cache=None, v_cache=None, **mistake):
        x = self.tok_emb(idx)                                     # (B, T, D)
        ks, vs = [], []
        for i, block in enumerate(self.blocks):
            past = (None, None) if k_cache is None else (k_cache[i], v_cache[i])
            x, k, v = block(x, *past, **mistake)                  # k, v (B, n_kv_head, t + T, d)
            ks.append(k)
            vs.append(v)
        return self.lm_head(self.norm(x)), torch.stack(ks), torch.stack(vs)


@torch.no_grad()
def generate(model: TinyGPT, idx: torch.Tensor, n_new: int, **mistake) -> torch.Tensor:
    """Greedy decoding with the caches: the prompt in one call, then one token a call."""
    logits, k_cache, v_cache = model(idx, **mistake)             # the prompt, at once
    for i in range(n_new):
        next_id = logits[:, -1].argmax(dim=-1, keepdim=True)      # (B, 1)
        idx = torch.cat([idx, next_id], dim=1)
        if i < n_new - 1:                                         # the newest token alone
            logits, k_cache, v_cache = model(next_id, k_cache, v_cache, **mistake)
    return idx


@torch.no_grad()
def generate_recompute(model: TinyGPT, idx: torch.Tensor, n_new: int) -> torch.Tensor:
    """Greedy decoding without a cache: the whole sequence again at every step."""
    for _ in range(n_new):
        logits = model(idx)[0]
        idx = torch.cat([idx, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
    return idx
