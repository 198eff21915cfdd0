"""Common wrong versions of the reference, used by hidden tests to name a likely cause.

Each function takes the same inputs as the reference it shadows and returns
{description of the mistake: what that mistake would return}. If a student's answer matches
one of them, the failure message says so. Instructor-only: ships with `solutions`.
"""

import math

import torch

from .masking import masked_softmax


def _finish(att, v):
    return att @ v, att


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.size(-1)
    raw = q @ k.transpose(-2, -1)
    scores = raw / math.sqrt(d)
    causes = {
        "the softmax was taken over the wrong axis (the queries, dim=-2, instead of the keys, "
        "dim=-1)": _finish(masked_softmax(scores, mask, dim=-2), v),
        "the scores were not divided by sqrt(d)": _finish(masked_softmax(raw, mask), v),
        "the scores were divided by d instead of sqrt(d)":
            _finish(masked_softmax(raw / d, mask), v),
    }
    if mask is not None:
        after = torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)
        causes.update({
            "the mask was applied after the softmax (set masked scores to -inf before it)":
                _finish(after, v),
            "masked scores were filled with 0 instead of -inf":
                _finish(torch.softmax(scores.masked_fill(~mask, 0.0), dim=-1), v),
            "the mask was ignored": _finish(torch.softmax(scores, dim=-1), v),
            "the mask was inverted (True means 'may attend')":
                _finish(masked_softmax(scores, ~mask), v),
        })
    return causes


def causal_mask(T, device=None):
    ones = torch.ones(T, T, dtype=torch.bool, device=device)
    return {
        "the diagonal is masked (off by one: a query may attend to itself)": ones.tril(-1),
        "the mask is transposed (query i may attend to keys 0..i, not i..T-1)": ones.triu(),
        "True and False are swapped (True means 'may attend')": ~ones.tril(),
    }


def multi_head_attention(module, query, key, value, mask=None):
    """Mistakes in a MultiHeadAttention forward; `module` is the reference holding the weights."""
    B, L, D = query.shape
    H, d_head = module.n_head, D // module.n_head
    if mask is not None and mask.dim() == 3:
        mask = mask.unsqueeze(1)

    def attention(split, merge, scale, project=True):
        q = split(module.q_proj(query))
        k, v = split(module.k_proj(key)), split(module.v_proj(value))
        att = masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(scale), mask)
        y = merge(att @ v)
        return (module.out_proj(y) if project else y), att

    def split(x):  # (B, T, D) -> (B, H, T, d_head)
        return x.view(B, -1, H, d_head).transpose(1, 2)

    def merge(y):  # (B, H, L, d_head) -> (B, L, D)
        return y.transpose(1, 2).reshape(B, L, D)

    def split_without_transpose(x):
        return x.view(B, H, -1, d_head)

    def merge_without_transpose(y):
        return y.reshape(B, L, D)

    return {
        "the heads were split with view/reshape but without transpose(1, 2), so each 'head' "
        "mixes several tokens": attention(split_without_transpose, merge_without_transpose,
                                          d_head),
        "the heads were split with view/reshape but without transpose(1, 2) (the merge "
        "undoes a transpose that never happened)": attention(split_without_transpose, merge,
                                                             d_head),
        "the heads were merged back without transpose(1, 2) before the reshape":
            attention(split, merge_without_transpose, d_head),
        "the scores were not divided by sqrt(d_head)": attention(split, merge, 1),
        "the scores were scaled by sqrt(d_model) instead of sqrt(d_head)":
            attention(split, merge, D),
        "the output projection (out_proj) was not applied": attention(split, merge, d_head, False),
    }


def softmax(x, dim=-1):
    e = torch.exp(x)
    other = 0 if (dim % x.dim()) != 0 else (1 if x.dim() > 1 else None)
    causes = {
        "the maximum was not subtracted before exp, so exp overflows to inf (inf / inf = NaN)":
            e / e.sum(dim=dim, keepdim=True),
        "the dim argument is ignored (always the last axis)": torch.softmax(x, dim=-1),
        "normalised by the sum of the whole tensor instead of along dim":
            torch.exp(x - x.max()) / torch.exp(x - x.max()).sum(),
    }
    if other is not None:
        causes["normalised along the wrong axis"] = torch.softmax(x, dim=other)
    return causes


def soft_select(query, keys, values, temperature=1.0):
    scores = query @ keys.transpose(-2, -1)
    return {
        "the scores were multiplied by the temperature instead of divided by it":
            _finish(torch.softmax(scores * temperature, dim=-1), values),
        "the temperature was ignored": _finish(torch.softmax(scores, dim=-1), values),
        "the softmax was taken over the queries (dim=-2) instead of the keys (dim=-1)":
            _finish(torch.softmax(scores / temperature, dim=-2), values),
    }


def nadaraya_watson(x_query, x_keys, y_values, bandwidth=1.0):
    diff = x_query.unsqueeze(-1) - x_keys.unsqueeze(-2)

    def pool(scores):
        w = torch.softmax(scores, dim=-1)
        return w @ y_values, w

    return {
        "the minus sign is missing, so far points get the most weight":
            pool(diff**2 / (2 * bandwidth**2)),
        "the squared distance was divided by h^2 instead of 2 h^2":
            pool(-(diff**2) / bandwidth**2),
        "the distance was not squared (|x - x_i| instead of (x - x_i)^2)":
            pool(-diff.abs() / (2 * bandwidth**2)),
        "the bandwidth was not squared (2 h instead of 2 h^2)": pool(-(diff**2) / (2 * bandwidth)),
    }


def layer_norm(module, x):
    """Mistakes in a LayerNorm forward; `module` holds the weight, bias and eps."""
    w, b, eps = module.weight, module.bias, module.eps
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    causes = {
        "the variance is the unbiased one (divides by d - 1, not d)":
            (x - mean) / torch.sqrt(x.var(dim=-1, keepdim=True, unbiased=True) + eps) * w + b,
        "eps was added outside the square root": (x - mean) / (torch.sqrt(var) + eps) * w + b,
        "the weight and bias were not applied": (x - mean) / torch.sqrt(var + eps),
    }
    if x.dim() > 1:
        m0 = x.mean(dim=0, keepdim=True)
        v0 = x.var(dim=0, keepdim=True, unbiased=False)
        causes["the statistics were taken over the wrong axis (dim=0, not the features)"] = (
            (x - m0) / torch.sqrt(v0 + eps) * w + b)
    return causes


def transformer_block(block, x):
    """Mistakes in a causal Transformer block's forward; `block` is the reference with weights."""
    def attn(y):
        return block.self_attn(y, y, y, is_causal=True)[0]

    mlp, n1, n2 = block.mlp, block.norm1, block.norm2
    pre = x + attn(n1(x))
    pre = pre + mlp(n2(pre))
    post = n1(x + attn(x))
    post = n2(post + mlp(post))
    no_res_attn_pre = attn(n1(x))
    no_res_attn_pre = no_res_attn_pre + mlp(n2(no_res_attn_pre))
    no_res_attn_post = n1(attn(x))
    no_res_attn_post = n2(no_res_attn_post + mlp(no_res_attn_post))
    no_res_mlp_pre = x + attn(n1(x))
    no_res_mlp_pre = mlp(n2(no_res_mlp_pre))
    no_res_mlp_post = n1(x + attn(x))
    no_res_mlp_post = n2(mlp(no_res_mlp_post))
    swapped_norms_pre = x + attn(n2(x))
    swapped_norms_pre = swapped_norms_pre + mlp(n1(swapped_norms_pre))
    first = block.norm_first
    return {
        "pre-norm and post-norm are swapped (check the norm_first branch)": post if first else pre,
        "the residual connection around attention is missing":
            no_res_attn_pre if first else no_res_attn_post,
        "the residual connection around the MLP is missing":
            no_res_mlp_pre if first else no_res_mlp_post,
        "norm1 and norm2 are swapped": swapped_norms_pre if first else None,
    }


def additive_attention(score, query, keys, mask=None):
    """Mistakes in additive attention for one query per sequence: query (B, d_q), keys
    (B, S, d_k); `score` is the reference AdditiveScore holding the weights."""
    pre = score.W_q(query).unsqueeze(1) + score.W_k(keys)  # (B, S, d_att)

    def finish(scores, fill=float("-inf"), dim=-1):
        if mask is not None:
            scores = scores.masked_fill(~mask, fill)
        weights = torch.softmax(scores, dim=dim)
        return (weights.unsqueeze(1) @ keys).squeeze(1), weights

    return {
        "tanh is missing (the score is then linear in q and k)": finish(score.w(pre).squeeze(-1)),
        "padded keys were filled with 0 instead of -inf":
            finish(score.w(torch.tanh(pre)).squeeze(-1), fill=0.0),
        "the softmax was taken over the batch (dim=0) instead of the keys":
            finish(score.w(torch.tanh(pre)).squeeze(-1), dim=0),
    }


def sinusoidal_encoding(T, d_model, device=None):
    pos = torch.arange(T, dtype=torch.float32, device=device).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32, device=device)
    i = two_i / 2

    def table(angle, first=torch.sin, second=torch.cos):
        pe = torch.zeros(T, d_model, device=device)
        pe[:, 0::2], pe[:, 1::2] = first(angle), second(angle[:, : d_model // 2])
        return pe

    return {
        "sine and cosine are swapped (sines go in the even columns)":
            table(pos / 10000 ** (two_i / d_model), torch.cos, torch.sin),
        "the exponent uses i instead of 2i": table(pos / 10000 ** (i / d_model)),
        "the angle is multiplied by 10000^(2i/d) instead of divided":
            table(pos * 10000 ** (two_i / d_model)),
    }
