"""Exact attention with less memory: the online softmax, tiled attention, and a KV cache.

- `online_softmax`: the softmax's maximum and sum in one pass over blocks of scores, the sum
  kept relative to the running maximum and rescaled when the maximum grows (Milakov and
  Gimelshein, "Online normalizer calculation for softmax", 2018).
- `tiled_attention`: attention one (block_q, block_k) tile of scores at a time, with the same
  rescaling for the running output (the idea of FlashAttention, Dao et al., 2022). It never
  forms the (L, S) score matrix, so its memory grows linearly with the length; with
  `is_causal`, tiles the causal mask hides entirely are skipped.
- `KVCache`, `decode_step`, `generate_cached`: greedy decoding of a `DecoderOnlyLM` that reads
  one new token per step and keeps each layer's past keys and values; `tinylm_step`, the
  efficient_attention notebook's model on one position over keys and values given as they are.

Masks follow the course convention: True = may attend. Everything is device-agnostic.
"""

import math

import torch


def online_softmax(x, block: int = 4):
    """Softmax over the last axis, its statistics read in one pass over blocks of columns.

    x: (..., n). Returns (p (..., n), m (..., 1), l (..., 1)): the softmax, the maximum of each
    row and the sum of exp(x - m) over the row.
    """
    m = torch.full((*x.shape[:-1], 1), float("-inf"), dtype=x.dtype, device=x.device)
    l = torch.zeros_like(m)
    for start in range(0, x.size(-1), block):
        xb = x[..., start:start + block]  # (..., b)
        m_new = torch.maximum(m, xb.amax(dim=-1, keepdim=True))
        # the sum so far was measured against m: bring it to the new maximum, then add
        l = l * torch.exp(m - m_new) + torch.exp(xb - m_new).sum(dim=-1, keepdim=True)
        m = m_new
    return torch.exp(x - m) / l, m, l


def _causal_tile(s, i0, j0):
    """Mask the scores of the tile whose top-left entry is (query i0, key j0): key j may be
    seen by query i when j <= i."""
    rows = torch.arange(i0, i0 + s.size(-2), device=s.device)[:, None]
    cols = torch.arange(j0, j0 + s.size(-1), device=s.device)[None, :]
    return s.masked_fill(~(cols <= rows), float("-inf"))  # keep where True = may attend


def tiled_attention(q, k, v, block_q: int = 16, block_k: int = 16, is_causal: bool = False):
    """softmax(q k^T / sqrt(d)) v, one (block_q, block_k) tile of scores at a time.

    q: (..., L, d), k: (..., S, d), v: (..., S, d_v) -> (..., L, d_v). `is_causal`: query i
    sees keys 0..i (top-left aligned, as `F.scaled_dot_product_attention(is_causal=True)`).
    """
    L, S = q.size(-2), k.size(-2)
    scale = 1 / math.sqrt(q.size(-1))
    out = q.new_empty(*q.shape[:-1], v.size(-1))  # (..., L, d_v)
    for i0 in range(0, L, block_q):  # outer loop: blocks of queries
        qi = q[..., i0:i0 + block_q, :]  # (..., bq, d)
        i1 = i0 + qi.size(-2)
        m = q.new_full((*qi.shape[:-1], 1), float("-inf"))  # (..., bq, 1) running max
        l = torch.zeros_like(m)  # running sum, relative to m
        o = q.new_zeros(*qi.shape[:-1], v.size(-1))  # (..., bq, d_v) running output
        last = min(S, i1) if is_causal else S  # causal: keys from i1 on are hidden from all
        for j0 in range(0, last, block_k):  # inner loop: blocks of keys and values
            kj, vj = k[..., j0:j0 + block_k, :], v[..., j0:j0 + block_k, :]
            s = qi @ kj.transpose(-2, -1) * scale  # (..., bq, bk): one tile of scores
            if is_causal and j0 + kj.size(-2) - 1 > i0:  # the tile crosses the diagonal
                s = _causal_tile(s, i0, j0)
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_new)  # (..., bq, bk)
            correction = torch.exp(m - m_new)  # rescales what was summed against the old max
            l = l * correction + p.sum(dim=-1, keepdim=True)
            o = o * correction + p @ vj
            m = m_new
        out[..., i0:i1, :] = o / l  # normalise once, at the end
    return out


class KVCache:
    """One layer's keys and values for the positions decoded so far: (B, H, t, d_head) each."""

    def __init__(self):
        self.k = None
        self.v = None

    def append(self, k, v):
        """Add the new positions' keys and values (B, H, t_new, d_head); return all of them."""
        self.k = k if self.k is None else torch.cat([self.k, k], dim=-2)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=-2)
        return self.k, self.v

    def __len__(self):
        return 0 if self.k is None else self.k.size(-2)


def _attend(q, k, v):
    """Plain attention of the new query over every cached key (all in its past: no mask)."""
    att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)
    return att @ v


@torch.no_grad()
def decode_step(model, token, t, caches):
    """One token through a pre-norm `DecoderOnlyLM`, reading and extending the caches.

    token: (B, 1), the id at position t; caches: one KVCache per block.
    Returns the next-token logits (B, vocab).
    """
    x = model.tok_emb(token) + model.pos.emb.weight[t]  # (B, 1, D)
    for block, cache in zip(model.blocks, caches, strict=True):
        attn = block.self_attn
        h = block.norm1(x)
        q = attn.split_heads(attn.q_proj(h))  # (B, H, 1, d_head)
        k, v = cache.append(attn.split_heads(attn.k_proj(h)),
                            attn.split_heads(attn.v_proj(h)))  # (B, H, t + 1, d_head)
        y = _attend(q, k, v)  # (B, H, 1, d_head)
        x = x + attn.out_proj(y.transpose(1, 2).reshape(x.shape))  # heads side by side again
        x = x + block.mlp(block.norm2(x))
    return model.lm_head(model.ln_f(x))[:, -1]  # (B, vocab)


@torch.no_grad()
def generate_cached(model, idx, n_new: int):
    """Greedy decoding with a KV cache: the same tokens as `model.greedy_generate(idx, n_new)`
    (while the sequence fits in max_len), one token through the model per step.

    idx: (B, T) prompt, T >= 1. Returns (B, T + n_new).
    """
    caches = [KVCache() for _ in model.blocks]
    for t in range(idx.size(1)):  # read the prompt into the caches
        logits = decode_step(model, idx[:, t:t + 1], t, caches)
    for i in range(n_new):
        next_id = logits.argmax(dim=-1, keepdim=True)  # (B, 1)
        idx = torch.cat([idx, next_id], dim=1)
        if i < n_new - 1:  # the last token needs no successor
            logits = decode_step(model, next_id, idx.size(1) - 1, caches)
    return idx


@torch.no_grad()
def tinylm_step(model, token, t, past):
    """The efficient_attention notebook's `TinyLM` (its `qkv` and `merge`) on one position t
    over given past keys and values: `past` holds one (keys, values) pair per block, each
    (B, H, t, d_head), whatever produced them. Returns the next-token logits (B, vocab)."""
    x = model.tok_emb(token) + model.pos_emb.weight[t]  # (B, 1, D)
    for block, (k_past, v_past) in zip(model.blocks, past, strict=True):
        q, k, v = block.self_attn.qkv(block.norm1(x))  # (B, H, 1, d_head) each
        k, v = torch.cat([k_past, k], dim=-2), torch.cat([v_past, v], dim=-2)
        x = x + block.self_attn.merge(_attend(q, k, v))
        x = x + block.mlp(block.norm2(x))
    return model.lm_head(model.ln_f(x))[:, -1]
