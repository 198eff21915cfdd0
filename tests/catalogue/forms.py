"""Correct answers to the code exercises, typed in styles the source solutions do not use:
einsum, torch.where, loops, preallocated buffers, functional calls, helper functions. Each is
an edit of one solution cell (as in catalogue.py) and must earn full marks
(tests/catalogue/test_catalogue.py). Each was written from its notebook's text alone: what the
text allows, and nothing it forbids.
"""

from catalogue import m

SA, SS, EA = "self_attention", "soft_select", "efficient_attention"
RNN, TF = "rnn_attention", "transformer"

SA_CAUSAL_BODY = "    return torch.ones(T, T, dtype=torch.bool, device=device).tril()"

SA_CAUSAL_DEF = "def causal_mask(T, device=None):"

SA_SDPA_BODY = '''    d = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (..., L, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    att = torch.softmax(scores, dim=-1)  # each row: a distribution over the keys
    return att @ v, att'''

SA_MHA_BODY = '''        B, L, _ = query.shape

        def split_heads(x):  # (B, T, d_model) -> (B, n_head, T, d_head)
            return x.view(B, -1, self.n_head, self.d_head).transpose(1, 2)

        q = split_heads(self.q_proj(query))
        k = split_heads(self.k_proj(key))
        v = split_heads(self.v_proj(value))
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (B, 1, L, S): the same mask for every head
        y, att = scaled_dot_product_attention(q, k, v, mask)  # (B, n_head, L, d_head)
        y = y.transpose(1, 2).reshape(B, L, self.d_model)  # heads side by side again
        return self.out_proj(y), att'''

SA_MHA_CLASS = "class MultiHeadAttention(nn.Module):"

SA_MHA_MID = '''
    def __init__(self, d_model, n_head):
        super().__init__()
        assert d_model % n_head == 0, "d_model must be divisible by n_head"
        self.d_model, self.n_head, self.d_head = d_model, n_head, d_model // n_head
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask=None):
        """query: (B, L, d_model); key, value: (B, S, d_model).
        mask: None, or boolean broadcastable to (B, L, S), True where the query may attend.
        Returns (output (B, L, d_model), weights (B, n_head, L, S)).
        """
'''

SA_PE_BODY = '''    pos = torch.arange(T, dtype=torch.float32, device=device).unsqueeze(1)  # (T, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32, device=device)  # (d_model / 2,)
    angle = pos / 10000 ** (two_i / d_model)  # (T, d_model / 2)
    pe = torch.zeros(T, d_model, device=device)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe'''

SA_PE_DEF = "def positional_encoding(T, d_model, device=None):"

SA_PE_DOC = '    """(T, d_model) sinusoidal position table: sines in even columns, cosines in odd ones."""'  # noqa: E501 (the solution's line)


SS_HARD = """    match = (query.unsqueeze(-2) == keys.unsqueeze(-3)).all(dim=-1)  # (..., L, S)
    weights = match.to(values.dtype)
    return weights @ values, weights"""

SS_SOFT = """    z = x - x.amax(dim=dim, keepdim=True)  # the largest entry becomes 0
    e = torch.exp(z)
    return e / e.sum(dim=dim, keepdim=True)"""

SS_SEL = """    scores = query @ keys.transpose(-2, -1) / temperature  # (..., L, S)
    weights = softmax(scores, dim=-1)
    return weights @ values, weights"""

SS_POOL = """    diff = x_query.unsqueeze(-1) - x_keys.unsqueeze(-2)  # (L, S)
    weights = softmax(-diff**2 / (2 * bandwidth**2), dim=-1)
    return weights @ y_values, weights"""


EA_ONLINE = '''    m = torch.full((*x.shape[:-1], 1), float("-inf"), dtype=x.dtype, device=x.device)
    l = torch.zeros_like(m)
    for start in range(0, x.size(-1), block):
        xb = x[..., start:start + block]  # (..., b): one block of columns
        m_new = torch.maximum(m, xb.amax(dim=-1, keepdim=True))
        l = l * torch.exp(m - m_new) + torch.exp(xb - m_new).sum(dim=-1, keepdim=True)
        m = m_new
    return torch.exp(x - m) / l, m, l'''

EA_APPEND = '''        if self.k is not None:  # the earlier positions first, the new ones after them
            k = torch.cat([self.k, k], dim=-2)
            v = torch.cat([self.v, v], dim=-2)
        self.k, self.v = k, v
        return k, v'''  # noqa: E501 (the solution's lines)

EA_KV_CELL = '''    def __init__(self):
        self.k = None  # (B, n_head, t, d_head) once something is appended
        self.v = None

    def append(self, k, v):
        """Add new positions (B, n_head, t_new, d_head); return all keys and values so far."""
''' + EA_APPEND

EA_ATT = ("            x = x + block.self_attn.merge(attention(q, k, v))"
       "  # all cached keys are in the past\n")

EA_CROSSING = '''                rows = torch.arange(i0, i1, device=q.device)[:, None]
                cols = torch.arange(j0, j1, device=q.device)[None, :]
                may_attend = cols <= rows  # True = may attend, the course's convention
                s = s.masked_fill(~may_attend, float("-inf"))'''

EA_STEP = '''        x = self.tok_emb(token) + self.pos_emb.weight[t]  # (B, 1, D)
        for block, cache in zip(self.blocks, caches, strict=True):
            q, k, v = block.self_attn.qkv(block.norm1(x))  # (B, H, 1, d_head) each
            k, v = cache.append(k, v)  # (B, H, t + 1, d_head): the past and this position
            x = x + block.self_attn.merge(attention(q, k, v))  # all cached keys are in the past
            x = x + block.mlp(block.norm2(x))
        return self.lm_head(self.ln_f(x))[:, -1]'''

EA_GEN = '''        caches = [KVCache() for _ in self.blocks]
        for t in range(idx.size(1)):  # read the prompt into the caches
            logits = self.step(idx[:, t:t + 1], t, caches)
        for i in range(n_new):
            next_id = logits.argmax(dim=-1, keepdim=True)  # (B, 1)
            idx = torch.cat([idx, next_id], dim=1)
            if i < n_new - 1:  # the last token needs no successor
                logits = self.step(next_id, idx.size(1) - 1, caches)
        return idx'''

EA_TILED = '''    L, S = q.size(-2), k.size(-2)
    scale = 1 / math.sqrt(q.size(-1))
    out = torch.empty(*q.shape[:-1], v.size(-1), dtype=q.dtype, device=q.device)
    for i0 in range(0, L, block_q):  # outer loop: blocks of queries
        i1 = min(i0 + block_q, L)
        qi = q[..., i0:i1, :]  # (..., bq, d)
        m = torch.full((*qi.shape[:-1], 1), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros_like(m)  # (..., bq, 1)
        o = torch.zeros(*qi.shape[:-1], v.size(-1), dtype=q.dtype, device=q.device)
        last = min(S, i1) if is_causal else S  # causal: keys from i1 on are hidden from all
        for j0 in range(0, last, block_k):  # inner loop: blocks of keys and values
            j1 = min(j0 + block_k, S)
            s = qi @ k[..., j0:j1, :].transpose(-2, -1) * scale  # (..., bq, bk): one tile
            if is_causal and j1 - 1 > i0:  # the tile holds keys later than some query
                rows = torch.arange(i0, i1, device=q.device)[:, None]
                cols = torch.arange(j0, j1, device=q.device)[None, :]
                may_attend = cols <= rows  # True = may attend, the course's convention
                s = s.masked_fill(~may_attend, float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_new)  # (..., bq, bk)
            correction = torch.exp(m - m_new)  # rescales what was summed against the old max
            l = l * correction + p.sum(dim=-1, keepdim=True)
            o = o * correction + p @ v[..., j0:j1, :]
            m = m_new
        out[..., i0:i1, :] = o / l  # normalise once, at the end
    return out'''


RNN_ADD_BODY = '''        hidden = torch.tanh(self.W_q(query).unsqueeze(1) + self.W_k(keys))  # (B, S, d_att)
        scores = self.w(hidden).squeeze(-1)  # (B, S)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        context = (weights.unsqueeze(1) @ keys).squeeze(1)  # (B, d_k)
        return context, weights'''  # noqa: E501 (the solution's lines)

RNN_DEC_BODY = '''        context, att = self.attention(h, enc_out, src_mask)  # (B, H), (B, S)
        h = self.cell(torch.cat([self.emb(y_prev), context], dim=-1), h)  # (B, H)
        logits = self.out(torch.cat([h, context], dim=-1))  # (B, V)
        return logits, h, att'''

RNN_GRID_BODY = '''    B, C, H, W = features.shape
    cells = features.flatten(2).transpose(1, 2)  # (B, H*W, C), row-major cells
    context, weights = attention(h, cells)
    return context, weights.view(B, H, W)'''


TF_LN_BODY = '''        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias'''

TF_MLP_BODY = "        return self.linear2(self.dropout(self.act(self.linear1(x))))"

TF_BLOCK_BODY = '''        if self.norm_first:
            x = x + self.self_attn(self.norm1(x))
            x = x + self.mlp(self.norm2(x))
        else:
            x = self.norm1(x + self.self_attn(x))
            x = self.norm2(x + self.mlp(x))
        return x'''

TF_DEC_BODY = '''        positions = torch.arange(idx.size(1), device=idx.device)  # (T,)
        x = self.tok_emb(idx) + self.pos_emb(positions)  # (B, T, d_model)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))  # (B, T, vocab)'''

TF_GREEDY_BODY = '''    logits = model(idx[:, -model.max_len:])  # (B, T', vocab)
    next_id = logits[:, -1].argmax(dim=-1, keepdim=True)  # (B, 1)
    return torch.cat([idx, next_id], dim=1)'''

CODE_FORMS = [
    # ---------------- causal_mask ----------------
    m("form_sa_causal_arange", "self_attention", "causal_mask", SA_CAUSAL_BODY,
      '''    i = torch.arange(T, device=device)
    return i[:, None] >= i[None, :]  # key j allowed for query i when j <= i''', None),
    # ---------------- sdpa ----------------
    m("form_sa_einsum", "self_attention", "sdpa", SA_SDPA_BODY,
      '''    scores = torch.einsum("...ld,...sd->...ls", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return torch.einsum("...ls,...sv->...lv", weights, v), weights''', None),
    m("form_sa_where_finfo_min", "self_attention", "sdpa", SA_SDPA_BODY,
      '''    d = q.size(-1)
    scores = q @ k.mT / math.sqrt(d)
    if mask is not None:
        scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
    att = scores.softmax(dim=-1)
    return att @ v, att''', None),
    m("form_sa_bmm_large_negative_inplace", "self_attention", "sdpa", SA_SDPA_BODY,
      '''    *lead, L, d = q.shape
    S = k.shape[-2]
    scores = torch.bmm(q.reshape(-1, L, d), k.reshape(-1, S, d).transpose(1, 2))
    scores = scores.view(*lead, L, S) / math.sqrt(d)
    if mask is not None:
        scores.masked_fill_(mask == False, -math.inf)  # noqa: E712  (a fresh tensor, not an input)
    att = torch.softmax(scores, dim=-1)
    out = torch.bmm(att.reshape(-1, L, S), v.reshape(-1, S, v.shape[-1]))
    return out.view(*lead, L, v.shape[-1]), att''', None),
    # ---------------- mha ----------------
    m("form_sa_mha_loop_heads_cat", "self_attention", "mha", SA_MHA_BODY,
      '''        q, k, v = self.q_proj(query), self.k_proj(key), self.v_proj(value)
        outs, weights = [], []
        for h in range(self.n_head):
            cols = slice(h * self.d_head, (h + 1) * self.d_head)
            # a (B, L, S) or (L, S) mask broadcasts against one head's (B, L, S) scores as is
            o, a = scaled_dot_product_attention(q[..., cols], k[..., cols], v[..., cols], mask)
            outs.append(o)
            weights.append(a)
        y = torch.cat(outs, dim=-1)  # (B, L, d_model), head h in columns h*d_head...
        return self.out_proj(y), torch.stack(weights, dim=1)''', None),
    # ---------------- positional_encoding ----------------
    m("form_sa_pe_python_loops", "self_attention", "positional_encoding", SA_PE_BODY,
      '''    pe = torch.zeros(T, d_model, dtype=torch.float32, device=device)
    for p in range(T):
        for i in range(d_model // 2):
            angle = p / 10000 ** (2 * i / d_model)
            pe[p, 2 * i] = math.sin(angle)
            pe[p, 2 * i + 1] = math.cos(angle)
    return pe''', None),
    # hard_select: "no feature differs", torch.where weights, broadcast-multiply-and-sum
    m("form_ss_hard_where_sum", SS, "hard_select", SS_HARD,
      "    differs = torch.ne(query.unsqueeze(-2), keys.unsqueeze(-3)).any(dim=-1)\n"
      "    weights = torch.where(differs, 0.0, 1.0).to(dtype=values.dtype)\n"
      "    output = (weights.unsqueeze(-1) * values.unsqueeze(-3)).sum(dim=-2)\n"
      "    return (output, weights)", None),
    # softmax through logsumexp (log-domain normalisation, stable, no torch softmax)
    m("form_ss_softmax_logsumexp", SS, "softmax", SS_SOFT,
      "    return torch.exp(x - x.logsumexp(dim, keepdim=True))", None),
    # softmax: in-place exp on its own fresh tensor (the input is never changed)
    m("form_ss_softmax_inplace_own", SS, "softmax", SS_SOFT,
      "    z = x - torch.amax(x, dim, keepdim=True)  # a new tensor: ours to change\n"
      "    z.exp_()\n"
      "    return z / z.sum(dim, keepdim=True)", None),
    # soft_select: einsum scores, validated temperature, einsum output
    m("form_ss_select_einsum", SS, "soft_select", SS_SEL,
      "    if not temperature > 0:\n"
      "        raise ValueError(f\"temperature must be positive, got {temperature}\")\n"
      "    scores = torch.einsum(\"...ld,...sd->...ls\", query, keys) / temperature\n"
      "    weights = softmax(scores, dim=-1)\n"
      "    return torch.einsum(\"...ls,...sv->...lv\", weights, values), weights", None),
    # attention_pooling: torch.cdist (exact mode), (d/h)^2 / 2, torch.mv
    m("form_ss_pool_cdist_mv", SS, "attention_pooling", SS_POOL,
      "    dist = torch.cdist(x_query.reshape(-1, 1), x_keys.reshape(-1, 1),\n"
      "                       compute_mode=\"donot_use_mm_for_euclid_dist\")  # |x - x_i|, (L, S)\n"
      "    weights = softmax(-0.5 * (dist / bandwidth).pow(2), dim=-1)\n"
      "    return torch.mv(weights, y_values), weights", None),
    # online softmax: torch.split over the columns, new_full / new_zeros
    m("form_ea_online_split", EA, "online_softmax", EA_ONLINE,
      '''    m = x.new_full((*x.shape[:-1], 1), float("-inf"))
    l = x.new_zeros((*x.shape[:-1], 1))
    for xb in torch.split(x, block, dim=-1):  # the last block may be shorter
        m_new = torch.maximum(m, xb.amax(dim=-1, keepdim=True))
        l = l * torch.exp(m - m_new) + torch.exp(xb - m_new).sum(dim=-1, keepdim=True)
        m = m_new
    p = torch.exp(x - m) / l
    return p, m, l''', None),
    # tiled attention: torch.split over key/value blocks (break when causal), the causal
    # mask of a crossing tile from tril(diagonal=i0 - j0), torch.where, q.new_* tensors
    m("form_ea_tiled_split_tril", EA, "tiled_attention", EA_TILED,
      '''    L, d = q.shape[-2], q.shape[-1]
    out = q.new_empty(*q.shape[:-1], v.shape[-1])
    for i0 in range(0, L, block_q):
        qi = q[..., i0:i0 + block_q, :]
        bq = qi.shape[-2]
        m = qi.new_full((*qi.shape[:-1], 1), -math.inf)
        l = qi.new_zeros((*qi.shape[:-1], 1))
        o = qi.new_zeros((*qi.shape[:-1], v.shape[-1]))
        blocks = zip(torch.split(k, block_k, dim=-2), torch.split(v, block_k, dim=-2))
        for j, (kj, vj) in enumerate(blocks):
            j0 = j * block_k
            if is_causal and j0 >= i0 + bq:  # this tile and all later ones are hidden
                break
            s = (qi @ kj.transpose(-2, -1)) / math.sqrt(d)
            if is_causal and j0 + kj.shape[-2] - 1 > i0:  # crosses the diagonal
                keep = torch.ones(bq, kj.shape[-2], dtype=torch.bool,
                                  device=q.device).tril(diagonal=i0 - j0)  # key j <= query i
                s = torch.where(keep, s, -math.inf)
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            alpha = torch.exp(m - m_new)
            p = torch.exp(s - m_new)
            l = alpha * l + p.sum(dim=-1, keepdim=True)
            o = alpha * o + p @ vj
            m = m_new
        out[..., i0:i0 + bq, :] = o / l
    return out''', None),
    # tiled attention computed in float64 inside whatever the inputs' dtype, the result given
    # back in theirs: more memory per position, but linear, which is what the points are for
    m("form_ea_tiled_float64_inside", EA, "tiled_attention", EA_TILED,
      "    dtype = q.dtype\n    q, k, v = q.double(), k.double(), v.double()\n"
      + EA_TILED.replace("\n    return out", "\n    return out.to(dtype)"), None),
    # KV cache: a preallocated buffer that doubles when full; self.k / self.v are views of
    # the positions filled so far
    m("form_ea_kv_buffer", EA, "kv_cache", EA_KV_CELL,
      '''    def __init__(self):
        self.k = None  # (B, n_head, t, d_head) once something is appended
        self.v = None
        self._kbuf = self._vbuf = None  # room for more positions than are filled
        self._t = 0  # positions filled so far

    def _grow(self, k, v, need):
        if self._kbuf is not None and need <= self._kbuf.shape[-2]:
            return
        size = max(need, 16) if self._kbuf is None else max(need, 2 * self._kbuf.shape[-2])
        kbuf = k.new_empty(*k.shape[:-2], size, k.shape[-1])
        vbuf = v.new_empty(*v.shape[:-2], size, v.shape[-1])
        if self._t:
            kbuf[..., :self._t, :] = self._kbuf[..., :self._t, :]
            vbuf[..., :self._t, :] = self._vbuf[..., :self._t, :]
        self._kbuf, self._vbuf = kbuf, vbuf

    def append(self, k, v):
        """Add new positions (B, n_head, t_new, d_head); return all keys and values so far."""
        t_new = self._t + k.shape[-2]
        self._grow(k, v, t_new)
        self._kbuf[..., self._t:t_new, :] = k  # after the positions already there
        self._vbuf[..., self._t:t_new, :] = v
        self._t = t_new
        self.k, self.v = self._kbuf[..., :t_new, :], self._vbuf[..., :t_new, :]
        return self.k, self.v''', None),
    # The Rules switch built-ins off only while the online softmax and tiled attention are
    # graded; this form lost 3 points until the KV-cache test left attention built-ins on.
    # step: attention of the newest query over the cache with F.scaled_dot_product_attention
    # (no mask: everything cached is in the past)
    m("form_ea_step_sdpa", EA, "cached_lm", EA_STEP,
      '''        x = self.tok_emb(token) + self.pos_emb.weight[t]  # (B, 1, D)
        for block, cache in zip(self.blocks, caches, strict=True):
            q, k, v = block.self_attn.qkv(block.norm1(x))
            k, v = cache.append(k, v)
            x = x + block.self_attn.merge(F.scaled_dot_product_attention(q, k, v))
            x = x + block.mlp(block.norm2(x))
        return self.lm_head(self.ln_f(x))[:, -1]''', None),
    # generate: tokens kept in a list, concatenated once at the end
    m("form_ea_generate_list", EA, "cached_lm", EA_GEN,
      '''        caches = [KVCache() for _ in self.blocks]
        tokens = list(idx.split(1, dim=1))  # (B, 1) each
        for t, token in enumerate(tokens):
            logits = self.step(token, t, caches)
        for _ in range(n_new):
            tokens.append(logits.argmax(dim=-1, keepdim=True))
            if len(tokens) < idx.shape[1] + n_new:
                logits = self.step(tokens[-1], len(tokens) - 1, caches)
        return torch.cat(tokens, dim=1)''', None),
    # scores with einsum on w's weight row, mask with torch.where, context with einsum
    m("rnn_add_einsum_where", RNN, "additive_attention", RNN_ADD_BODY,
      '''        q = self.W_q(query)[:, None, :]  # (B, 1, d_att)
        k = self.W_k(keys)  # (B, S, d_att)
        scores = torch.einsum("bsa,a->bs", torch.tanh(q + k), self.w.weight[0])
        if mask is not None:
            scores = torch.where(mask, scores, float("-inf"))
        weights = F.softmax(scores, dim=1)
        context = torch.einsum("bs,bsd->bd", weights, keys)
        return context, weights''', None),
    # log of the mask added to the scores: 0 where real, -inf where padded
    m("rnn_add_log_mask", RNN, "additive_attention",
      'scores = scores.masked_fill(~mask, float("-inf"))',
      'scores = scores + mask.to(scores.dtype).log()', None),
    # explicit names, tuple cat, keyword arguments of GRUCell
    m("rnn_dec_explicit", RNN, "decoder_step", RNN_DEC_BODY,
      '''        context, att = self.attention(query=h, keys=enc_out, mask=src_mask)
        emb = self.emb(y_prev)  # (B, d_emb)
        gru_in = torch.cat((emb, context), 1)
        h_new = self.cell(input=gru_in, hx=h)
        logits = self.out(torch.cat((h_new, context), 1))
        return (logits, h_new, att)''', None),
    # movedim + flatten(1, 2), view with -1
    m("rnn_grid_movedim", RNN, "grid_attention", RNN_GRID_BODY, '''    _, _, H, W = features.size()
    context, weights = attention(h, torch.movedim(features, 1, -1).flatten(1, 2))
    return context, weights.view(-1, H, W)''', None),
    # cells gathered one by one in row-major order, then stacked
    m("rnn_grid_loop_stack", RNN, "grid_attention", RNN_GRID_BODY,
      '''    B, C, H, W = features.shape
    cells = torch.stack([features[:, :, i, j] for i in range(H) for j in range(W)], dim=1)
    context, weights = attention(h, cells)
    return context, weights.view_as(features[:, 0])''', None),
    # torch.var_mean, biased
    m("tf_ln_var_mean", TF, "layernorm", TF_LN_BODY,
      '''        var, mean = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias''', None),
    # F.gelu (exact, the same as nn.GELU()) and F.dropout with training=self.training
    m("tf_mlp_functional", TF, "mlp", TF_MLP_BODY, '''        h = F.gelu(self.linear1(x))
        h = F.dropout(h, p=self.dropout.p, training=self.training)
        return self.linear2(h)''', None),
    # one loop over the two (norm, sub-layer) pairs
    m("tf_block_loop", TF, "block", TF_BLOCK_BODY,
      '''        for norm, sublayer in ((self.norm1, self.self_attn), (self.norm2, self.mlp)):
            if self.norm_first:
                x = x + sublayer(norm(x))
            else:
                x = norm(x + sublayer(x))
        return x''', None),
    # topk(1).indices and hstack
    m("tf_greedy_topk", TF, "greedy", TF_GREEDY_BODY,
      '''    context = idx if idx.size(1) <= model.max_len else idx[:, -model.max_len:]
    last = model(context)[:, -1, :]  # (B, vocab)
    return torch.hstack([idx, last.topk(1, dim=-1).indices])''', None),
    # the answer written into a new tensor
    m("tf_greedy_prealloc", TF, "greedy", TF_GREEDY_BODY, '''    B, T = idx.shape
    logits = model(idx[:, max(0, T - model.max_len):])
    out = idx.new_empty(B, T + 1)
    out[:, :T] = idx
    out[:, T] = torch.argmax(logits[:, -1], dim=1)
    return out''', None),
]

# Tensors created or moved in ways a GPU runs (each checked on an H100 against the device check,
# tests/catalogue/test_device_check_gpu.py): CPU scalars, CPU indices, a round trip through the
# CPU, a value read back from the CPU for a loop bound (not judged on meta: it has no values)
TILE_MASK = ('''                rows = torch.arange(i0, i1, device=q.device)[:, None]
                cols = torch.arange(j0, j1, device=q.device)[None, :]
                may_attend = cols <= rows  # True = may attend, the course's convention
                s = s.masked_fill(~may_attend, float("-inf"))''')
ONLINE_INIT = ('    m = torch.full((*x.shape[:-1], 1), float("-inf"), dtype=x.dtype, '
               'device=x.device)\n    l = torch.zeros_like(m)')
CPU_SCALAR_INIT = ('    m = torch.tensor(float("-inf"), dtype=x.dtype)  # 0-dim, on the CPU\n'
                   "    l = torch.tensor(0.0, dtype=x.dtype)")
DEVICE_FORMS = [
    m("form_sa_sdpa_cpu_scalar_scale", SA, "sdpa", "/ math.sqrt(d)", "/ torch.tensor(d).sqrt()",
      None),
    m("form_sa_sdpa_cpu_round_trip", SA, "sdpa", "att = torch.softmax(scores, dim=-1)",
      "att = torch.softmax(scores.cpu(), dim=-1).to(scores.device)", None),
    m("form_sa_mha_fill_cpu_scalar", SA, "mha",
      "        y, att = scaled_dot_product_attention(q, k, v, mask)  # (B, n_head, L, d_head)",
      '''        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.tensor(float("-inf")))
        att = torch.softmax(scores, dim=-1)
        y = att @ v  # (B, n_head, L, d_head)''', None),
    m("form_ea_online_cpu_scalar_start", EA, "online_softmax", ONLINE_INIT, CPU_SCALAR_INIT,
      None),
    m("form_ea_online_loop_bound_from_cpu", EA, "online_softmax",
      ONLINE_INIT + "\n    for start in range(0, x.size(-1), block):",
      CPU_SCALAR_INIT + "\n    n = int(torch.tensor(x.size(-1), device=x.device).cpu())\n"
      "    for start in range(0, n, block):", None),
    m("form_ea_tiled_cpu_bool_index", EA, "tiled_attention", TILE_MASK,
      '''                rows = torch.arange(i0, i1)[:, None]  # CPU: only used as an index
                cols = torch.arange(j0, j1)[None, :]
                s[..., cols > rows] = float("-inf")''', None),
    m("form_ea_tiled_triu_indices", EA, "tiled_attention", TILE_MASK,
      '''                r, c = torch.triu_indices(i1 - i0, j1 - j0, offset=i0 - j0 + 1)
                s[..., r, c] = float("-inf")''', None),
    m("form_tf_ln_eps_type_as", TF, "layernorm",
      "(x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias",
      "(x - mean) / torch.sqrt(var + torch.full((1,), self.eps).type_as(var))"
      " * self.weight + self.bias", None),
    m("form_tf_decoder_cpu_index", TF, "decoder",
      "positions = torch.arange(idx.size(1), device=idx.device)  # (T,)\n"
      "        x = self.tok_emb(idx) + self.pos_emb(positions)",
      "positions = torch.arange(idx.size(1))  # CPU: only used as an index\n"
      "        x = self.tok_emb(idx) + self.pos_emb.weight[positions]", None),
]
CODE_FORMS += DEVICE_FORMS

# ---------------- tiny_gpt (the capstone) ----------------
TG = "tiny_gpt"
TG_ROTARY_BODY = '''    T, d = x.shape[-2:]
    positions = torch.arange(start, start + T, device=x.device, dtype=x.dtype)  # (T,)
    i = torch.arange(d // 2, device=x.device, dtype=x.dtype)
    theta = 10000.0 ** (-2 * i / d)  # (d/2,)
    angle = positions[:, None] * theta[None, :]  # (T, d/2)
    cos, sin = angle.cos(), angle.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., T, d/2): the pairs' two coordinates
    turned = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)  # (..., T, d/2, 2)
    return turned.flatten(-2)'''
TG_ATTENTION_BODY = '''        B, T, D = x.shape
        q = self.q_proj(x).view(B, T, self.n_head, self.d_head).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv_head, self.d_head).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv_head, self.d_head).transpose(1, 2)
        t = 0 if k_past is None else k_past.size(2)  # positions read before
        q, k = apply_rotary(q, t), apply_rotary(k, t)
        if k_past is not None:
            k = torch.cat([k_past, k], dim=2)  # (B, n_kv_head, t + T, d_head)
            v = torch.cat([v_past, v], dim=2)
        group = self.n_head // self.n_kv_head  # query heads per key-and-value head
        k_all = k.repeat_interleave(group, dim=1)  # (B, n_head, t + T, d_head)
        v_all = v.repeat_interleave(group, dim=1)
        scores = q @ k_all.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, n_head, T, t + T)
        allowed = torch.ones(T, t + T, dtype=torch.bool, device=x.device).tril(diagonal=t)
        att = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        y = (att @ v_all).transpose(1, 2).reshape(B, T, D)
        return self.out_proj(y), k, v'''
CODE_FORMS += [
    # complex numbers: each pair as one complex number, turned by multiplying with e^(i angle)
    m("form_tg_rotary_complex", TG, "rotary", TG_ROTARY_BODY,
      '''    T, d = x.shape[-2:]
    positions = torch.arange(start, start + T, device=x.device, dtype=x.dtype)
    theta = 10000.0 ** (-torch.arange(0, d, 2, device=x.device, dtype=x.dtype) / d)
    angle = torch.outer(positions, theta)  # (T, d/2)
    turn = torch.polar(torch.ones_like(angle), angle)  # e^(i angle), complex
    pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(pairs * turn).reshape(x.shape)''', None),
    # the groups as an axis of their own (no repeated keys) and the causal rule on positions
    m("form_tg_attention_grouped_einsum", TG, "attention", TG_ATTENTION_BODY,
      '''        B, T, D = x.shape
        g = self.n_head // self.n_kv_head
        q = self.q_proj(x).reshape(B, T, self.n_kv_head, g, self.d_head).permute(0, 2, 3, 1, 4)
        k = self.k_proj(x).reshape(B, T, self.n_kv_head, self.d_head).permute(0, 2, 1, 3)
        v = self.v_proj(x).reshape(B, T, self.n_kv_head, self.d_head).permute(0, 2, 1, 3)
        t = k_past.shape[-2] if k_past is not None else 0
        q, k = apply_rotary(q, start=t), apply_rotary(k, start=t)
        if k_past is not None:
            k, v = torch.cat((k_past, k), dim=-2), torch.cat((v_past, v), dim=-2)
        scores = torch.einsum("bhgtd,bhsd->bhgts", q, k) / self.d_head ** 0.5
        pos_q = torch.arange(t, t + T, device=x.device)[:, None]  # true positions
        later = torch.arange(t + T, device=x.device) > pos_q
        att = scores.masked_fill(later, float("-inf")).softmax(dim=-1)
        y = torch.einsum("bhgts,bhsd->bhgtd", att, v)  # (B, n_kv_head, g, T, d_head)
        return self.out_proj(y.reshape(B, self.n_head, T, self.d_head).transpose(1, 2)
                             .reshape(B, T, D)), k, v''', None),
]
