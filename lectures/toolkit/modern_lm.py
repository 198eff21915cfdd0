"""A small decoder-only language model with lecture 10's choices: where the positions come from,
how many key and value heads there are, and which keys a query reads.

`ModernLM` is assembled from the reference package's pieces: pre-norm blocks with `RMSNorm` and
`SwiGLU` (as in LLaMA; or LayerNorm and a GELU MLP, as in GPT-2, for comparison), the
projections of `GroupedQueryAttention`, `apply_rotary`, `sliding_window_mask` and
`linear_attention`. forward(idx (B, T)) -> logits (B, T, vocab), so `toolkit.char_lm.train_lm`
and `toolkit.seeds.train_seeds` train it.

Positions (`position`):
- "learned": one trained vector per position added to the token (GPT-2); at most max_len tokens.
- "sinusoidal": the fixed sinusoids of Vaswani et al. (2017) added to the token; any length.
- "rotary": every layer's queries and keys turned by their positions (Su et al. 2021).
- "alibi": no position vectors; the score of query i for key j gets -m_h (i - j), a penalty
  linear in the distance with one slope m_h per head (Press et al. 2022, "Train Short, Test
  Long", Section 3).
- "none": nothing; a causal model can still tell where it is from how much it has read.

`n_kv_head` key and value heads are shared by the n_head query heads (grouped-query attention;
1 is multi-query). `window`: query i reads keys i - window + 1 .. i only (None: every earlier
key); it is an attribute, so a trained model can be evaluated with another. `attention="linear"`
replaces the softmax by causal linear attention (Katharopoulos et al. 2020), which has no score
matrix, so no ALiBi and no window.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

import solutions

POSITIONS = ("learned", "sinusoidal", "rotary", "alibi", "none")


def alibi_slopes(n_head: int) -> torch.Tensor:
    """(n_head,) slopes: the geometric sequence that starts at 2^(-8/n_head) and has that ratio
    (Press et al. 2022, Section 3): 1/2, 1/4, ..., 1/256 for 8 heads."""
    return 2.0 ** (-8.0 * torch.arange(1, n_head + 1) / n_head)


def alibi_bias(n_head: int, T: int, device=None) -> torch.Tensor:
    """(n_head, T, T) bias -m_h (i - j) for query i and key j (positive above the diagonal,
    where the causal mask hides the keys anyway)."""
    i = torch.arange(T, device=device)
    distance = (i[:, None] - i[None, :]).float()                      # (T, T): i - j
    return -alibi_slopes(n_head).to(device)[:, None, None] * distance   # (n_head, T, T)


class Attention(solutions.GroupedQueryAttention):
    """Causal self-attention with n_kv_head key and value heads, the model's positions inside
    the scores (rotary, ALiBi), an optional window, or linear attention instead of the softmax.

    forward(x (B, T, D), window) -> (B, T, D).
    """

    def __init__(self, d_model: int, n_head: int, n_kv_head: int, position: str,
                 attention: str = "softmax"):
        super().__init__(d_model, n_head, n_kv_head, bias=False, rotary=position == "rotary")
        self.alibi = position == "alibi"
        self.linear = attention == "linear"

    def qkv(self, x):
        """Queries, keys and values, (B, n_head, T, d_head) each: rotated when rotary, the key
        and value heads repeated for their groups of query heads."""
        q = self.heads(self.q_proj(x), self.n_head)             # (B, n_head, T, d_head)
        k = self.heads(self.k_proj(x), self.n_kv_head)          # (B, n_kv_head, T, d_head)
        v = self.heads(self.v_proj(x), self.n_kv_head)
        if self.rotary:
            q, k = solutions.apply_rotary(q), solutions.apply_rotary(k)
        group = self.n_head // self.n_kv_head                   # query heads per key head
        k = k.repeat_interleave(group, dim=1)                   # (B, n_head, T, d_head)
        v = v.repeat_interleave(group, dim=1)
        return q, k, v

    def scores(self, q, k, window: int | None = None):
        """(B, n_head, T, T) scores before the softmax, -inf where a query may not read: the
        causal mask, a sliding window of `window` keys, or with window=("strided", s) the
        strided pattern of Child et al. (2019, Section 4) split between the heads."""
        T = q.size(-2)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, n_head, T, T)
        if self.alibi:
            att = att + alibi_bias(self.n_head, T, q.device)
        if window is None:
            mask = solutions.causal_mask(T, device=q.device)
        elif isinstance(window, tuple):         # ("strided", s): Child et al.'s two patterns,
            stride = window[1]                  # the first half of the heads on the last s keys,
            local = solutions.sliding_window_mask(T, stride, device=q.device)
            strided = solutions.strided_mask(T, stride, device=q.device)  # the rest every s-th
            half = self.n_head // 2
            mask = torch.stack([local] * half + [strided] * (self.n_head - half))  # (n_head, T, T)
        else:
            mask = solutions.sliding_window_mask(T, window, device=q.device)
        return att.masked_fill(~mask, float("-inf"))

    def forward(self, x, window: int | None = None):
        B, T, D = x.shape
        q, k, v = self.qkv(x)
        if self.linear:
            y = solutions.linear_attention(q, k, v, causal=True)          # (B, n_head, T, d)
        else:
            y = torch.softmax(self.scores(q, k, window), dim=-1) @ v     # (B, n_head, T, d)
        return self.out_proj(y.transpose(1, 2).reshape(B, T, D))       # heads side by side


BLOCKS = ("rmsnorm-swiglu", "layernorm-gelu")


def norm(kind: str, d_model: int) -> nn.Module:
    return solutions.RMSNorm(d_model) if kind == "rmsnorm-swiglu" else solutions.LayerNorm(d_model)


class Block(nn.Module):
    """Pre-norm block: x + attention(norm(x)), then x + mlp(norm(x)); the norm and MLP are
    RMSNorm and SwiGLU (as in LLaMA) or LayerNorm and a GELU MLP (as in GPT-2)."""

    def __init__(self, d_model: int, n_head: int, n_kv_head: int, d_ff: int, position: str,
                 attention: str, kind: str = "rmsnorm-swiglu"):
        super().__init__()
        self.norm1 = norm(kind, d_model)
        self.attn = Attention(d_model, n_head, n_kv_head, position, attention)
        self.norm2 = norm(kind, d_model)
        self.mlp = (solutions.SwiGLU(d_model, d_ff) if kind == "rmsnorm-swiglu"
                    else solutions.MLP(d_model, d_ff, activation="gelu"))

    def forward(self, x, window: int | None = None):
        x = x + self.attn(self.norm1(x), window)
        return x + self.mlp(self.norm2(x))


class ModernLM(nn.Module):
    """forward(idx (B, T) token ids) -> logits (B, T, vocab); logits[:, t] predict idx[:, t + 1].

    block: "rmsnorm-swiglu" (the default) or "layernorm-gelu". d_ff defaults to two thirds of
    4 d_model for SwiGLU (its three matrices then hold the plain MLP's parameters) and to
    4 d_model for the GELU MLP; n_kv_head to n_head. Only "learned" positions limit T to
    max_len; for the others max_len is the length the model is meant for (what
    `toolkit.char_lm.sample` feeds it).
    """

    def __init__(self, vocab: int, d_model: int, n_head: int, n_layer: int, max_len: int,
                 position: str = "rotary", n_kv_head: int | None = None,
                 window: int | None = None, attention: str = "softmax",
                 d_ff: int | None = None, block: str = "rmsnorm-swiglu"):
        super().__init__()
        if block not in BLOCKS:
            raise ValueError(f"block={block!r} is not one of {BLOCKS}")
        if position not in POSITIONS:
            raise ValueError(f"position={position!r} is not one of {POSITIONS}")
        if attention not in ("softmax", "linear"):
            raise ValueError(f"attention={attention!r} is not 'softmax' or 'linear'")
        if attention == "linear" and (position == "alibi" or window is not None):
            raise ValueError("linear attention has no scores to bias or mask: "
                             "no ALiBi and no window")
        self.max_len, self.position, self.window = max_len, position, window
        self.d_model = d_model
        n_kv_head = n_head if n_kv_head is None else n_kv_head
        d_ff = d_ff or (8 * d_model // 3 if block == "rmsnorm-swiglu" else 4 * d_model)
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model) if position == "learned" else None
        self.blocks = nn.ModuleList(
            Block(d_model, n_head, n_kv_head, d_ff, position, attention, block)
            for _ in range(n_layer))
        self.norm = norm(block, d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx):
        T = idx.size(1)
        x = self.tok_emb(idx)                                   # (B, T, D)
        if self.position == "learned":
            if T > self.max_len:
                raise ValueError(f"learned positions stop at max_len={self.max_len}: "
                                 f"there is no vector for position {T - 1}")
            x = x + self.pos_emb(torch.arange(T, device=idx.device))
        elif self.position == "sinusoidal":
            x = x + solutions.sinusoidal_encoding(T, self.d_model, device=idx.device)
        if self.window is not None and self.blocks[0].attn.linear:
            raise ValueError("linear attention has no window")
        for block in self.blocks:
            x = block(x, self.window)
        return self.lm_head(self.norm(x))                       # (B, T, vocab)


@torch.no_grad()
def loss_per_position(model, data: torch.Tensor, length: int, *, windows: int = 64,
                      seed: int = 1234) -> torch.Tensor:
    """(length,) mean cross-entropy (nats) of the prediction at each position, over `windows`
    fixed windows of `length` + 1 tokens of `data` (1-D ids), each read from its start."""
    model.eval()
    g = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, len(data) - length - 1, (windows,), generator=g)
    x = torch.stack([data[s:s + length] for s in starts])       # (windows, length)
    y = torch.stack([data[s + 1:s + length + 1] for s in starts])
    logits = model(x)                                           # (windows, length, vocab)
    loss = F.cross_entropy(logits.transpose(1, 2), y, reduction="none")   # (windows, length)
    return loss.mean(0)


def kv_cache_bytes_per_token(model: ModernLM, bytes_per_number: int = 4) -> int:
    """Bytes the KV cache keeps for each token: keys and values of every layer's kv heads."""
    return sum(2 * b.attn.n_kv_head * b.attn.d_head * bytes_per_number for b in model.blocks)
