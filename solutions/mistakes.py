"""Common wrong versions of the reference, used by hidden tests to verify a cause.

Each function takes the same inputs as the reference it shadows and returns
{cause id (grader/checks/causes.py): what that mistake would return}. A cause is named only if
its output reproduces the student's; a cause left out (or None) behaves like the reference on
these inputs. Instructor-only: ships with `solutions`.
"""

import math

import torch

from .attention import attend
from .masking import masked_softmax


def unstable_softmax(x, dim=-1):
    """exp / sum without subtracting the maximum: inf / inf or 0 / 0 on large scores."""
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)


def softmax(x, dim=-1):
    n = x.dim()
    causes = {
        "softmax_no_max": unstable_softmax(x, dim),
        "softmax_min": unstable_softmax(x - x.amin(dim=dim, keepdim=True), dim),
        "softmax_global_max": unstable_softmax(x - x.max(), dim),
        "softmax_ignores_dim": torch.softmax(x, dim=-1),
        "softmax_whole_tensor": torch.exp(x - x.max()) / torch.exp(x - x.max()).sum(),
        "softmax_whole_tensor#each slice's maximum": (
            torch.exp(x - x.amax(dim=dim, keepdim=True))
            / torch.exp(x - x.amax(dim=dim, keepdim=True)).sum()),
    }
    other = 0 if dim % n != 0 else (1 if n > 1 else None)
    if other is not None and other != n - 1:
        causes["softmax_other_axis"] = torch.softmax(x, dim=other)
    return causes


def hard_select(query, keys, values):
    equal = query.unsqueeze(-2) == keys.unsqueeze(-3)
    w_any = equal.any(dim=-1).to(values.dtype)
    w_all = equal.all(dim=-1).to(values.dtype)
    w_norm = w_all / w_all.sum(dim=-1, keepdim=True)
    return {"hard_select_any": (w_any @ values, w_any),
            "hard_select_normalised": (w_norm @ values, w_norm)}


def _finish(att, v):
    return att @ v, att


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.size(-1)
    raw = q @ k.transpose(-2, -1)
    scores = raw / math.sqrt(d)

    def fill(s, value=float("-inf"), where=None):
        if mask is None:
            return s
        return s.masked_fill(~mask if where is None else where, value)

    causes = {
        "softmax_over_queries": _finish(torch.softmax(fill(scores), dim=-2), v),
        "not_scaled": _finish(torch.softmax(fill(raw), dim=-1), v),
        "scaled_by_d": _finish(torch.softmax(fill(raw / d), dim=-1), v),
        "scale_multiplied": _finish(torch.softmax(fill(raw * math.sqrt(d)), dim=-1), v),
        "scaled_by_keys": _finish(torch.softmax(fill(raw / math.sqrt(k.size(-2))), dim=-1), v),
        "softmax_no_max": _finish(unstable_softmax(fill(scores)), v),
        "returned_scores": (torch.softmax(fill(scores), dim=-1) @ v, fill(scores)),
    }
    if mask is not None:
        causes.update({
            "mask_after_softmax": _finish(torch.softmax(scores, dim=-1).masked_fill(~mask, 0), v),
            "mask_zero_fill": _finish(torch.softmax(fill(scores, 0.0), dim=-1), v),
            "mask_ignored": _finish(torch.softmax(scores, dim=-1), v),
            "mask_inverted": _finish(torch.softmax(fill(scores, where=mask), dim=-1), v),
        })
    return causes


def causal_mask(T, device=None):
    ones = torch.ones(T, T, dtype=torch.bool, device=device)
    return {"causal_off_by_one": ones.tril(-1), "causal_transposed": ones.triu(),
            "causal_inverted": ~ones.tril()}


def multi_head_attention(module, query, key, value, mask=None):
    """Mistakes in a MultiHeadAttention forward (and in the attention it calls); `module` is
    the reference holding the weights."""
    B, L, D = query.shape
    H, d_head = module.n_head, D // module.n_head
    if mask is not None and mask.dim() == 3:
        mask = mask.unsqueeze(1)

    def split(x):  # (B, T, D) -> (B, H, T, d_head)
        return x.view(B, -1, H, d_head).transpose(1, 2)

    def merge(y):  # (B, H, L, d_head) -> (B, L, D)
        return y.transpose(1, 2).reshape(B, L, D)

    def split_no_t(x):
        return x.view(B, H, -1, d_head)

    def merge_no_t(y):
        return y.reshape(B, L, D)

    def run(split=split, merge=merge, scale=d_head, project=True, q_w=module.q_proj,
            k_w=module.k_proj, v_w=module.v_proj, key=key, value=value):
        q, k, v = split(q_w(query)), split(k_w(key)), split(v_w(value))
        att = masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(scale), mask)
        y = merge(att @ v)
        return (module.out_proj(y) if project else y), att

    causes = {
        "heads_split_no_transpose": run(split_no_t, merge_no_t),
        "heads_merge_no_transpose": run(merge=merge_no_t),
        "no_out_proj": run(project=False),
        "scaled_by_d_model": run(scale=D),
        "key_value_swapped": run(key=value, value=key),
        "value_uses_k_proj": run(v_w=module.k_proj),
        "q_k_proj_swapped": run(q_w=module.k_proj, k_w=module.q_proj),
    }
    # a mistake in the student's own scaled_dot_product_attention shows here too: the heads'
    # q, k, v are the reference's, so its mistakes are worked out once for all of them (one it
    # leaves out, such as a mask's without a mask, behaves like the reference)
    q, k, v = split(module.q_proj(query)), split(module.k_proj(key)), split(module.v_proj(value))
    inside = scaled_dot_product_attention(q, k, v, mask)
    for cause in ("softmax_over_queries", "not_scaled", "scaled_by_d", "scale_multiplied",
                  "scaled_by_keys", "mask_after_softmax", "mask_zero_fill", "mask_ignored",
                  "mask_inverted", "softmax_no_max", "returned_scores"):
        if cause in inside:
            y, att = inside[cause]
            causes.setdefault(cause, (module.out_proj(merge(y)), att))
    causes["heads_split_no_transpose#merged with transpose"] = run(split_no_t, merge)
    return causes


def soft_select(query, keys, values, temperature=1.0):
    scores = query @ keys.transpose(-2, -1)
    w = torch.softmax(scores / temperature, dim=-1)
    return {
        "temperature_multiplied": _finish(torch.softmax(scores * temperature, dim=-1), values),
        "temperature_ignored": _finish(torch.softmax(scores, dim=-1), values),
        "softmax_over_queries": _finish(torch.softmax(scores / temperature, dim=-2), values),
        "averaged_keys": (w @ keys, w),
        "softmax_no_max": _finish(unstable_softmax(scores / temperature), values),
        "softmax_min": _finish(unstable_softmax(
            scores / temperature - (scores / temperature).amin(-1, keepdim=True)), values),
    }


def nadaraya_watson(x_query, x_keys, y_values, bandwidth=1.0):
    diff = x_query.unsqueeze(-1) - x_keys.unsqueeze(-2)

    def pool(scores, norm=lambda s: torch.softmax(s, dim=-1)):
        w = norm(scores)
        return w @ y_values, w

    right = -(diff**2) / (2 * bandwidth**2)
    return {
        "kernel_sign": pool(diff**2 / (2 * bandwidth**2)),
        "kernel_no_two": pool(-(diff**2) / bandwidth**2),
        "kernel_not_squared": pool(-diff.abs() / (2 * bandwidth**2)),
        "bandwidth_not_squared": pool(-(diff**2) / (2 * bandwidth)),
        "softmax_no_max": pool(right, unstable_softmax),
        "softmax_over_queries": pool(right, lambda s: torch.softmax(s, dim=-2)),
    }


def layer_norm(module, x):
    """Mistakes in a LayerNorm forward; `module` holds the weight, bias and eps."""
    w, b, eps = module.weight, module.bias, module.eps

    def norm(dim=-1, unbiased=False, center=True, affine=True, eps_inside=True, eps=eps):
        mean = x.mean(dim=dim, keepdim=True)
        var = x.var(dim=dim, keepdim=True, unbiased=unbiased)
        y = (x - mean) if center else x
        y = y / (torch.sqrt(var + eps) if eps_inside else torch.sqrt(var) + eps)
        return y * w + b if affine else y

    causes = {"ln_unbiased": norm(unbiased=True), "ln_eps_outside": norm(eps_inside=False),
              "ln_no_affine": norm(affine=False), "ln_no_eps": norm(eps=0.0),
              "ln_no_mean": norm(center=False)}
    if x.dim() > 1:
        causes["ln_wrong_axis"] = norm(dim=0)
    return causes


def mlp(module, x):
    """Mistakes in an MLP forward (evaluation mode); `module` holds the weights."""
    return {"mlp_no_activation": module.linear2(module.linear1(x)),
            "mlp_relu": module.linear2(torch.relu(module.linear1(x)))}


def mlp_training(module, x):
    """Mistakes in where an MLP applies its dropout, in training mode; `module` holds the
    weights and the dropout."""
    hidden = module.act(module.linear1(x))
    return {"mlp_dropout_after_linear2": module.dropout(module.linear2(hidden)),
            "mlp_no_dropout": module.linear2(hidden)}


def transformer_block(block, x):
    """Mistakes in a causal Transformer block's forward; `block` is the reference with weights."""
    def attn(y):
        return block.self_attn(y, y, y, is_causal=True)[0]

    mlp, n1, n2 = block.mlp, block.norm1, block.norm2

    def pre(a=n1, b=n2, res_attn=True, res_mlp=True):
        y = (x if res_attn else 0) + attn(a(x))
        return (y if res_mlp else 0) + mlp(b(y))

    def post(a=n1, b=n2, res_attn=True, res_mlp=True):
        y = a((x if res_attn else 0) + attn(x))
        return b((y if res_mlp else 0) + mlp(y))

    same, other = (pre, post) if block.norm_first else (post, pre)
    return {"pre_post_swapped": other(), "no_residual_attn": same(res_attn=False),
            "no_residual_mlp": same(res_mlp=False), "norms_swapped": same(n2, n1)}


def additive_attention(score, query, keys, mask=None):
    """Mistakes in additive attention for one query per sequence: query (B, d_q), keys
    (B, S, d_k); `score` is the reference AdditiveScore holding the weights."""
    pre = score.W_q(query).unsqueeze(1) + score.W_k(keys)  # (B, S, d_att)
    tanh = torch.tanh(pre)

    def finish(hidden=tanh, fill=float("-inf"), where=None, norm=None):
        scores = score.w(hidden).squeeze(-1)
        if mask is not None and fill is not None:
            scores = scores.masked_fill(~mask if where is None else where, fill)
        weights = (norm or (lambda s: torch.softmax(s, dim=-1)))(scores)
        return (weights.unsqueeze(1) @ keys).squeeze(1), weights

    causes = {
        "additive_no_tanh": finish(pre),
        "additive_relu": finish(torch.relu(pre)),
        "softmax_over_batch": finish(norm=lambda s: torch.softmax(s, dim=0)),
        "softmax_no_max": finish(norm=unstable_softmax),
    }
    if mask is not None:
        causes.update({"mask_zero_fill": finish(fill=0.0), "mask_ignored": finish(fill=None),
                       "mask_inverted": finish(where=mask)})
    return causes


def decoder_step(decoder, y_prev, h, enc_out, src_mask=None):
    """Mistakes in an attention decoder step; `decoder` is the reference AttentionDecoder."""
    def attention(state):
        m = None if src_mask is None else src_mask.unsqueeze(1)
        context, att = attend(state.unsqueeze(1), enc_out, enc_out, score=decoder.score, mask=m)
        return context.squeeze(1), att.squeeze(1)

    emb = decoder.emb(y_prev)
    context, att = attention(h)
    h_new = decoder.cell(torch.cat([emb, context], dim=-1), h)
    early = decoder.cell(torch.cat([emb, h], dim=-1), h)
    late_context, late_att = attention(early)
    return {
        "decoder_new_state_query": (decoder.out(torch.cat([early, late_context], dim=-1)),
                                    early, late_att),
        "decoder_logits_old_state": (decoder.out(torch.cat([h, context], dim=-1)), h_new, att),
    }


def attend_grid(score, h, features):
    """Mistakes in attention over a CNN grid; `score` is the reference AdditiveScore."""
    B, C, H, W = features.shape

    def run(cells):  # the weights reshaped to (B, H, W) as if the cells were row by row
        context, weights = attend(h.unsqueeze(1), cells, cells, score=score)
        return context.squeeze(1), weights.view(B, H, W)

    return {"grid_reshape": run(features.reshape(B, H * W, C)),
            "grid_columns_first": run(features.transpose(2, 3).flatten(2).transpose(1, 2))}


def sinusoidal_encoding(T, d_model, device=None):
    pos = torch.arange(T, dtype=torch.float32, device=device).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32, device=device)

    def table(angle, first=torch.sin, second=torch.cos):
        pe = torch.zeros(T, d_model, device=device)
        pe[:, 0::2], pe[:, 1::2] = first(angle), second(angle[:, : d_model // 2])
        return pe

    return {
        "pe_sin_cos_swapped": table(pos / 10000 ** (two_i / d_model), torch.cos, torch.sin),
        "pe_exponent_i": table(pos / 10000 ** (two_i / 2 / d_model)),
        "pe_multiplied": table(pos * 10000 ** (two_i / d_model)),
        "pe_base": table(pos / 1000 ** (two_i / d_model)),
    }


def decoder_lm(model, idx):
    """Mistakes in a decoder-only LM's forward; `model` is the reference DecoderOnlyLM."""
    def run(positions=True, final_norm=True):
        x = model.tok_emb(idx)
        x = model.pos(x) if positions else x
        for block in model.blocks:
            x = block(x, is_causal=True)
        return model.lm_head(model.ln_f(x) if final_norm else x)

    return {"no_positions": run(positions=False), "no_final_norm": run(final_norm=False)}


def greedy_generate(model, idx, n_new):
    """Mistakes in one greedy step, repeated n_new times; `model` is the reference LM."""
    def run(position=-1, crop=True):
        out = idx
        for _ in range(n_new):
            context = out[:, -model.max_len:] if crop else out
            if context.size(1) > model.max_len:
                return None  # the positions run out: such code raises instead
            logits = model(context)
            out = torch.cat([out, logits[:, position].argmax(-1, keepdim=True)], dim=1)
        return out

    with torch.no_grad():
        return {"greedy_first_position": run(position=0), "greedy_no_crop": run(crop=False)}


# --- efficient attention: the online softmax, tiled attention, the KV cache -------------------

def online_softmax(x, block=4):
    """Mistakes in the online softmax's update of the running maximum m and sum l."""
    def run(m0=float("-inf"), rescale=lambda m, m_new: torch.exp(m - m_new), running_max=True,
            subtract_max=True):
        m = torch.full((*x.shape[:-1], 1), m0, dtype=x.dtype, device=x.device)
        l = torch.zeros_like(m)
        for start in range(0, x.size(-1), block):
            xb = x[..., start:start + block]
            m_new = xb.amax(dim=-1, keepdim=True)
            m_new = torch.maximum(m, m_new) if running_max else m_new
            if subtract_max:
                l = l * rescale(m, m_new) + torch.exp(xb - m_new).sum(dim=-1, keepdim=True)
            else:
                l = l + torch.exp(xb).sum(dim=-1, keepdim=True)
            m = m_new
        return (torch.exp(x - m) if subtract_max else torch.exp(x)) / l, m, l

    return {"online_rescale_flipped": run(rescale=lambda m, m_new: torch.exp(m_new - m)),
            "online_sum_not_rescaled": run(rescale=lambda m, m_new: 1),
            "online_max_not_running": run(running_max=False),
            "online_max_init_zero": run(m0=0.0),
            "softmax_no_max": run(subtract_max=False)}


def tiled_attention(q, k, v, block_q=16, block_k=16, is_causal=False):
    """Mistakes in tiled attention: the running output, the scale, and the causal tiles."""
    L, S = q.size(-2), k.size(-2)

    def run(rescale_o=True, scale=True, may_attend=lambda cols, rows: cols <= rows,
            inverted=False, last_key=lambda i0, i1: min(S, i1),
            crosses=lambda i0, j0, j1: j1 - 1 > i0):
        factor = 1 / math.sqrt(q.size(-1)) if scale else 1.0
        out = q.new_empty(*q.shape[:-1], v.size(-1))
        for i0 in range(0, L, block_q):
            i1 = min(i0 + block_q, L)
            qi = q[..., i0:i1, :]
            m = q.new_full((*qi.shape[:-1], 1), float("-inf"))
            l = torch.zeros_like(m)
            o = q.new_zeros(*qi.shape[:-1], v.size(-1))
            for j0 in range(0, last_key(i0, i1) if is_causal else S, block_k):
                j1 = min(j0 + block_k, S)
                s = qi @ k[..., j0:j1, :].transpose(-2, -1) * factor
                if is_causal and crosses(i0, j0, j1):
                    rows = torch.arange(i0, i1, device=q.device)[:, None]
                    cols = torch.arange(j0, j1, device=q.device)[None, :]
                    keep = may_attend(cols, rows)
                    s = s.masked_fill(keep if inverted else ~keep, float("-inf"))
                m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
                p = torch.exp(s - m_new)
                correction = torch.exp(m - m_new)
                l = l * correction + p.sum(dim=-1, keepdim=True)
                o = (o * correction if rescale_o else o) + p @ v[..., j0:j1, :]
                m = m_new
            out[..., i0:i1, :] = o / l
        return out

    causes = {"tiled_output_not_rescaled": run(rescale_o=False), "not_scaled": run(scale=False)}
    if is_causal:
        causes.update({
            "causal_off_by_one": run(may_attend=lambda cols, rows: cols < rows),
            "mask_inverted": run(inverted=True),
            "causal_diagonal_tiles_skipped": run(last_key=lambda i0, i1: min(S, i0)),
            "causal_tile_not_masked": run(crosses=lambda i0, j0, j1: j0 > i0),
        })
    return causes


def generate_cached(model, idx, n_new):
    """Mistakes in greedy decoding with a KV cache; `model` is the reference DecoderOnlyLM."""
    from .efficient import KVCache, _attend

    def step(token, t, caches, position_shift=0, append_query=False, overwrite=False):
        x = model.tok_emb(token) + model.pos.emb.weight[t + position_shift]
        for block, cache in zip(model.blocks, caches, strict=True):
            attn = block.self_attn
            h = block.norm1(x)
            q, k, v = (attn.split_heads(p(h)) for p in (attn.q_proj, attn.k_proj, attn.v_proj))
            if overwrite:
                cache.k = cache.v = None  # the cache never holds more than the newest position
            k, v = cache.append(q if append_query else k, v)
            y = _attend(q, k, v)
            x = x + attn.out_proj(y.transpose(1, 2).reshape(x.shape))
            x = x + block.mlp(block.norm2(x))
        return model.lm_head(model.ln_f(x))[:, -1]

    def run(refeed=False, **slip):
        if idx.size(1) + n_new + slip.get("position_shift", 0) > model.max_len:
            return None  # such code would run out of positions and raise
        out, caches = idx, [KVCache() for _ in model.blocks]
        for t in range(out.size(1)):
            logits = step(out[:, t:t + 1], t, caches, **slip)
        for i in range(n_new):
            out = torch.cat([out, logits.argmax(dim=-1, keepdim=True)], dim=1)
            if i == n_new - 1:
                break
            for t in range(out.size(1)) if refeed else [out.size(1) - 1]:
                logits = step(out[:, t:t + 1], t, caches, **slip)
        return out

    with torch.no_grad():
        return {"kv_cache_overwritten": run(overwrite=True),
                "kv_cache_appends_query": run(append_query=True),
                "kv_position_off_by_one": run(position_shift=1),
                "kv_recomputes_past": run(refeed=True)}


# --- the capstone (tiny_gpt): rotary positions, grouped-query attention with a cache ---------

def rotary(x, start=0):
    """apply_rotary's slips: halves instead of neighbours, `start` ignored, turned backwards,
    the frequencies' exponent without its 2."""
    from .tiny_gpt import rotary_at

    T, d = x.shape[-2:]
    positions = torch.arange(start, start + T, device=x.device, dtype=x.dtype)
    i = torch.arange(d // 2, device=x.device, dtype=x.dtype)

    def turn(x1, x2, theta, sign=1.0):
        angle = positions[:, None] * theta[None, :]                  # (T, d/2)
        cos, sin = angle.cos(), sign * angle.sin()
        return x1 * cos - x2 * sin, x1 * sin + x2 * cos

    theta = 10000.0 ** (-2 * i / d)
    a, b = turn(x[..., : d // 2], x[..., d // 2:], theta)
    halves = torch.cat([a, b], dim=-1)
    a, b = turn(x[..., 0::2], x[..., 1::2], theta, sign=-1.0)
    backwards = torch.stack([a, b], dim=-1).flatten(-2)
    a, b = turn(x[..., 0::2], x[..., 1::2], 10000.0 ** (-i / d))
    frequencies = torch.stack([a, b], dim=-1).flatten(-2)
    return {"rotary_halves": halves,
            "rotary_ignores_start": rotary_at(x, 0) if start else None,
            "rotary_backwards": backwards,
            "rotary_frequencies": frequencies}


_CACHE_SLIPS = {"gqa_heads_tiled": {"group_tiled": True},
                "rotary_ignores_start": {"offset_rotary": False},
                "cache_mask_not_offset": {"offset_mask": False}}


def tiny_gpt_attention(ref, x, k_past=None, v_past=None):
    """The capstone's attention with one slip each (solutions.tiny_gpt.cached_attention's flags)."""
    return {cause: ref(x, k_past, v_past, **flags) for cause, flags in _CACHE_SLIPS.items()}


def tiny_gpt_model(ref, idx, k_cache=None, v_cache=None):
    return {cause: ref(idx, k_cache, v_cache, **flags) for cause, flags in _CACHE_SLIPS.items()}


@torch.no_grad()
def _generate_refeeding(ref, idx, n_new):
    """Every step feeds the whole sequence so far with the caches: the past enters them again."""
    logits, k_cache, v_cache = ref(idx)
    for i in range(n_new):
        idx = torch.cat([idx, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
        if i < n_new - 1:
            logits, k_cache, v_cache = ref(idx, k_cache, v_cache)
    return idx


def tiny_gpt_generate(ref, idx, n_new):
    from .tiny_gpt import generate

    causes = {cause: generate(ref, idx, n_new, **flags) for cause, flags in _CACHE_SLIPS.items()}
    causes["kv_recomputes_past"] = _generate_refeeding(ref, idx, n_new)
    return causes
