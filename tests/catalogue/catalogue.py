"""The catalogue of common mistakes: realistic slips, each a small edit to a correct answer.

Each entry says which assignment and solution cell it changes, the exact text it replaces, and
`cause`: the id (grader/checks/causes.py) of its true cause, or None where no test can tell the
cause apart (the failure then only says what is wrong). tests/catalogue/test_catalogue.py grades
them all through `autograde` and proves that every mistake loses points, that no message names a
wrong cause, and that at least 90% of them name the right one. FORMS are correct answers typed in
every form the text allows; they must earn full marks (forms.py: the code exercises' forms).
"""

import re
from dataclasses import dataclass

from grader.demo.sample_class import Edit


@dataclass(frozen=True)
class Mistake:
    id: str
    assignment: str
    edit: Edit
    cause: str | None  # the cause id a message should name


def m(id, assignment, cell, old, new, cause):
    return Mistake(id, assignment, Edit(cell, old, new), cause)


def no_device(id, assignment, cell, old):
    """The slip of leaving `device=` out of `old`: the tensor is made on the CPU."""
    return m(id, assignment, cell, old, re.sub(r", device=[\w.]+", "", old), "stray_cpu_tensor")


SA, SS, BH, RNN, TF = "self_attention", "soft_select", "by_hand", "rnn_attention", "transformer"
EA = "efficient_attention"
TG = "tiny_gpt"
ONLINE_L = "l = l * torch.exp(m - m_new) + torch.exp(xb - m_new).sum(dim=-1, keepdim=True)"
SOFTMAX = "torch.softmax(scores, dim=-1)"
FILL = 'scores.masked_fill(~mask, float("-inf"))'
SCALE = "q @ k.transpose(-2, -1) / math.sqrt(d)"
SPLIT = "x.view(B, -1, self.n_head, self.d_head).transpose(1, 2)"
MERGE = "y.transpose(1, 2).reshape(B, L, self.d_model)"
SS_MAX = "z = x - x.amax(dim=dim, keepdim=True)"
KERNEL = "softmax(-diff**2 / (2 * bandwidth**2), dim=-1)"
ADD_TANH = "torch.tanh(self.W_q(query).unsqueeze(1) + self.W_k(keys))"
ADD_FILL = 'scores.masked_fill(~mask, float("-inf"))'
ADD_SOFTMAX = "weights = torch.softmax(scores, dim=-1)"
LN_STATS = ("mean = x.mean(dim=-1, keepdim=True)\n"
            "        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)")
MLP_OUT = "self.linear2(self.dropout(self.act(self.linear1(x))))"
LN_OUT = "(x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias"
A_SOURCE = ("[[1/14, 9/22, 1/6, 3/6],\n     [9/14, 9/22, 3/6, 1/6],\n     [1/14, 3/22, 1/6, 1/6],\n"
            "     [3/14, 1/22, 1/6, 1/6]]")
Z_SOURCE = ("[[1.64, 1.41, 1.50, 1.17],\n     [0.71, 0.82, 0.67, 0.67],\n"
            "     [-0.57, -0.27, -0.33, 0.00]]")

MISTAKES = [
    # --- self_attention: scaled dot-product attention
    m("softmax_wrong_axis", SA, "sdpa", SOFTMAX, "torch.softmax(scores, dim=-2)",
      "softmax_over_queries"),
    m("no_scale", SA, "sdpa", SCALE, "q @ k.transpose(-2, -1)", "not_scaled"),
    m("scale_by_d", SA, "sdpa", "/ math.sqrt(d)", "/ d", "scaled_by_d"),
    m("scale_multiplied", SA, "sdpa", "/ math.sqrt(d)", "* math.sqrt(d)", "scale_multiplied"),
    m("scale_by_keys", SA, "sdpa", "/ math.sqrt(d)", "/ math.sqrt(k.size(-2))",
      "scaled_by_keys"),
    m("sdpa_unstable_softmax", SA, "sdpa", SOFTMAX,
      "scores.exp() / scores.exp().sum(dim=-1, keepdim=True)", "softmax_no_max"),
    m("returned_scores", SA, "sdpa", "return att @ v, att", "return att @ v, scores",
      "returned_scores"),
    # float32 arithmetic inside float64 grading: right to float32's tolerance only (the message
    # says so); one constant rounded to float32 passes (forms.py), a float32 softmax does not
    m("sdpa_softmax_in_float32", SA, "sdpa", SOFTMAX,
      "torch.softmax(scores, dim=-1, dtype=torch.float32).to(scores.dtype)", None),
    m("mask_after_softmax", SA, "sdpa",
      f"    if mask is not None:\n        scores = {FILL}\n    att = {SOFTMAX}",
      f"    att = {SOFTMAX}\n    if mask is not None:\n        att = att.masked_fill(~mask, 0.0)",
      "mask_after_softmax"),
    m("mask_filled_with_zero", SA, "sdpa", FILL, "scores.masked_fill(~mask, 0.0)",
      "mask_zero_fill"),
    m("mask_inverted", SA, "sdpa", FILL, 'scores.masked_fill(mask, float("-inf"))',
      "mask_inverted"),
    # a finite stand-in for -inf: right at every usual scale, wrong once every score is below it
    # (a hidden case has scores below -1e10); nothing tells it apart from other slips there
    m("mask_filled_with_minus_1e9", SA, "sdpa", FILL, "scores.masked_fill(~mask, -1e9)", None),
    m("mask_ignored", SA, "sdpa", f"scores = {FILL}", "pass", "mask_ignored"),
    m("mask_in_place", SA, "sdpa", "    d = q.size(-1)\n",
      "    d = q.size(-1)\n    q /= 1.0\n", "inplace_input"),
    # --- self_attention: causal mask
    m("causal_off_by_one", SA, "causal_mask", ".tril()", ".tril(-1)", "causal_off_by_one"),
    m("causal_transposed", SA, "causal_mask", ".tril()", ".triu()", "causal_transposed"),
    m("causal_inverted", SA, "causal_mask", "return torch.ones", "return ~torch.ones",
      "causal_inverted"),
    m("causal_float", SA, "causal_mask", "dtype=torch.bool, ", "", None),
    m("cpu_tensor_in_function", SA, "causal_mask", ", device=device)", ")", "device_ignored"),
    m("hard_coded_cuda", SA, "causal_mask", "device=device)", 'device="cuda")',
      "device_hard_coded"),
    # --- self_attention: multi-head attention
    m("heads_without_transpose", SA, "mha", SPLIT, "x.view(B, self.n_head, -1, self.d_head)",
      "heads_split_no_transpose"),
    m("merge_without_transpose", SA, "mha", MERGE, "y.reshape(B, L, self.d_model)",
      "heads_merge_no_transpose"),
    m("no_output_projection", SA, "mha", "return self.out_proj(y), att", "return y, att",
      "no_out_proj"),
    m("scale_by_d_model", SA, "mha", "scaled_dot_product_attention(q, k, v, mask)",
      "scaled_dot_product_attention(q * math.sqrt(self.d_head / self.d_model), k, v, mask)",
      "scaled_by_d_model"),
    m("key_value_swapped", SA, "mha", "k = split_heads(self.k_proj(key))\n"
      "        v = split_heads(self.v_proj(value))", "k = split_heads(self.k_proj(value))\n"
      "        v = split_heads(self.v_proj(key))", "key_value_swapped"),
    m("value_uses_k_proj", SA, "mha", "self.v_proj(value)", "self.k_proj(value)",
      "value_uses_k_proj"),
    m("q_k_proj_swapped", SA, "mha", "q = split_heads(self.q_proj(query))\n"
      "        k = split_heads(self.k_proj(key))", "q = split_heads(self.k_proj(query))\n"
      "        k = split_heads(self.q_proj(key))", "q_k_proj_swapped"),
    m("mha_mask_head_axis_misplaced", SA, "mha", "mask = mask.unsqueeze(1)",
      "mask = mask.unsqueeze(2)", None),  # right for (B, 1, S) masks, wrong for (B, L, S)
    # --- self_attention: positions
    m("sin_cos_swapped", SA, "positional_encoding",
      "pe[:, 0::2] = torch.sin(angle)\n    pe[:, 1::2] = torch.cos(angle)",
      "pe[:, 0::2] = torch.cos(angle)\n    pe[:, 1::2] = torch.sin(angle)",
      "pe_sin_cos_swapped"),
    m("pe_exponent_i", SA, "positional_encoding", "10000 ** (two_i / d_model)",
      "10000 ** (two_i / 2 / d_model)", "pe_exponent_i"),
    m("pe_multiplied", SA, "positional_encoding", "pos / 10000 ** (two_i / d_model)",
      "pos * 10000 ** (two_i / d_model)", "pe_multiplied"),
    m("pe_base_1000", SA, "positional_encoding", "10000 **", "1000 **", "pe_base"),
    no_device("pe_device_ignored", SA, "positional_encoding",
              "pe = torch.zeros(T, d_model, device=device)"),
    no_device("pe_positions_on_cpu", SA, "positional_encoding",
              "pos = torch.arange(T, dtype=torch.float32, device=device)"),
    # --- soft_select: softmax
    m("softmax_overflow", SS, "softmax", SS_MAX, "z = x", "softmax_no_max"),
    m("softmax_via_log_softmax", SS, "softmax",
      "    z = x - x.amax(dim=dim, keepdim=True)  # the largest entry becomes 0\n"
      "    e = torch.exp(z)\n    return e / e.sum(dim=dim, keepdim=True)",
      "    return torch.log_softmax(x, dim=dim).exp()  # the built-in, by another door", None),
    m("softmax_min", SS, "softmax", "x.amax(", "x.amin(", "softmax_min"),
    m("softmax_global_max", SS, "softmax", SS_MAX, "z = x - x.max()", "softmax_global_max"),
    m("softmax_ignores_dim", SS, "softmax",
      f"{SS_MAX}  # the largest entry becomes 0\n    e = torch.exp(z)\n"
      "    return e / e.sum(dim=dim, keepdim=True)",
      "z = x - x.amax(dim=-1, keepdim=True)\n    e = torch.exp(z)\n"
      "    return e / e.sum(dim=-1, keepdim=True)", "softmax_ignores_dim"),
    m("softmax_whole_tensor", SS, "softmax", "return e / e.sum(dim=dim, keepdim=True)",
      "return e / e.sum()", "softmax_whole_tensor"),
    m("softmax_in_place", SS, "softmax", SS_MAX, "x -= x.amax(dim=dim, keepdim=True)\n    z = x",
      "inplace_input"),
    # --- soft_select: hard select, soft select, pooling
    m("hard_select_any", SS, "hard_select", ".all(dim=-1)", ".any(dim=-1)", "hard_select_any"),
    m("hard_select_normalised", SS, "hard_select", "weights = match.to(values.dtype)",
      "weights = match.to(values.dtype)\n    weights = weights / weights.sum(-1, keepdim=True)",
      "hard_select_normalised"),
    m("hard_select_weights_in_query_dtype", SS, "hard_select", "match.to(values.dtype)",
      "match.to(query.dtype)", None),
    m("temperature_multiplied", SS, "soft_select", "/ temperature", "* temperature",
      "temperature_multiplied"),
    m("temperature_ignored", SS, "soft_select", " / temperature", "", "temperature_ignored"),
    m("soft_select_over_queries", SS, "soft_select", "softmax(scores, dim=-1)",
      "softmax(scores, dim=-2)", "softmax_over_queries"),
    m("averaged_keys", SS, "soft_select", "return weights @ values", "return weights @ keys",
      "averaged_keys"),
    m("kernel_sign", SS, "attention_pooling", "softmax(-diff**2", "softmax(diff**2",
      "kernel_sign"),
    m("kernel_no_two", SS, "attention_pooling", "(2 * bandwidth**2)", "(bandwidth**2)",
      "kernel_no_two"),
    m("kernel_not_squared", SS, "attention_pooling", "-diff**2", "-diff.abs()",
      "kernel_not_squared"),
    m("bandwidth_not_squared", SS, "attention_pooling", "(2 * bandwidth**2)", "(2 * bandwidth)",
      "bandwidth_not_squared"),
    m("pooling_unstable", SS, "attention_pooling", f"weights = {KERNEL}",
      "e = torch.exp(-diff**2 / (2 * bandwidth**2))\n    weights = e / e.sum(-1, keepdim=True)",
      "softmax_no_max"),
    m("pooling_over_queries", SS, "attention_pooling", "(2 * bandwidth**2), dim=-1)",
      "(2 * bandwidth**2), dim=0)", "softmax_over_queries"),
    # --- by_hand (each step judged from the student's own previous steps)
    m("Q_weight_transposed", BH, "answer_Q", "[[2, 1, 1, 0], [0, 2, 0, 1], [1, 0, 1, 0]]",
      "[[2, 2, 1, 0], [0, 2, 0, 1], [1, 0, 1, 0]]", None),
    m("K_weight_transposed", BH, "answer_K", "[[0, 2, 0, 1], [2, 1, 1, 0], [1, 1, 0, 0]]",
      "[[0, 2, 0, 1], [1, 0, 1, 0], [1, 3, 0, 1]]", "paper_weight_transposed"),
    m("V_weight_transposed", BH, "answer_V", "[[1, 2, 1, 1], [1, 1, 0, 0], [0, -1, 1, 0]]",
      "[[2, 1, 1, 0], [1, 0, 1, 0], [-1, 1, 0, 1]]", "paper_weight_transposed"),
    m("scores_transposed", BH, "answer_scores",
      "[[1, 4, 1, 2], [5, 4, 3, 1], [0, 2, 0, 1], [2, 1, 1, 0]]",
      "[[1, 5, 0, 2], [4, 4, 2, 1], [1, 3, 0, 1], [2, 1, 1, 0]]", "paper_scores_transposed"),
    m("rounded_not_floored", BH, "answer_scaled",
      "[[0, 2, 0, 1], [2, 2, 1, 0], [0, 1, 0, 0], [1, 0, 0, 0]]",
      "[[0, 2, 0, 1], [2, 2, 2, 0], [0, 1, 0, 0], [1, 0, 0, 0]]", "paper_rounded"),
    m("rounded_up", BH, "answer_scaled",
      "[[0, 2, 0, 1], [2, 2, 1, 0], [0, 1, 0, 0], [1, 0, 0, 0]]",
      "[[1, 2, 1, 1], [3, 2, 2, 1], [0, 1, 0, 1], [1, 1, 1, 0]]", "paper_ceil"),
    m("rows_normalised", BH, "answer_A", A_SOURCE,
      "[[0.071, 0.643, 0.071, 0.214], [0.409, 0.409, 0.136, 0.045],\n"
      "     [0.167, 0.5, 0.167, 0.167], [0.5, 0.167, 0.167, 0.167]]", "paper_rows_normalised"),
    m("base_e_not_3", BH, "answer_A", A_SOURCE,
      "[[0.083, 0.399, 0.175, 0.475], [0.61, 0.399, 0.475, 0.175],\n"
      "     [0.083, 0.147, 0.175, 0.175], [0.225, 0.054, 0.175, 0.175]]", "paper_base_e"),
    m("A_from_unscaled", BH, "answer_A", A_SOURCE,
      "[[0.0117, 0.4655, 0.0882, 0.5625], [0.9492, 0.4655, 0.7941, 0.1875],\n"
      "     [0.0039, 0.0517, 0.0294, 0.1875], [0.0352, 0.0172, 0.0882, 0.0625]]", "paper_unscaled"),
    m("Z_transposed", BH, "answer_Z", Z_SOURCE,
      "[[1.556, 2.128, 0.677, 0.639], [0.481, 1.052, 0.208, 0.26],\n"
      "     [-0.242, 0.091, 0.03, 0.121]]", "paper_z_transposed"),
    # --- rnn_attention: additive attention
    m("additive_no_tanh", RNN, "additive_attention", ADD_TANH,
      "self.W_q(query).unsqueeze(1) + self.W_k(keys)", "additive_no_tanh"),
    m("additive_relu", RNN, "additive_attention", ADD_TANH,
      "torch.relu(self.W_q(query).unsqueeze(1) + self.W_k(keys))", "additive_relu"),
    m("additive_pad_zero", RNN, "additive_attention", ADD_FILL, "scores.masked_fill(~mask, 0.0)",
      "mask_zero_fill"),
    m("additive_mask_inverted", RNN, "additive_attention", ADD_FILL,
      'scores.masked_fill(mask, float("-inf"))', "mask_inverted"),
    m("additive_mask_ignored", RNN, "additive_attention", f"scores = {ADD_FILL}", "pass",
      "mask_ignored"),
    m("additive_softmax_batch", RNN, "additive_attention", ADD_SOFTMAX,
      "weights = torch.softmax(scores, dim=0)", "softmax_over_batch"),
    m("additive_unstable", RNN, "additive_attention", ADD_SOFTMAX,
      "weights = scores.exp() / scores.exp().sum(-1, keepdim=True)", "softmax_no_max"),
    # --- rnn_attention: decoder step and grid
    m("decoder_new_state_query", RNN, "decoder_step",
      "        context, att = self.attention(h, enc_out, src_mask)  # (B, H), (B, S)\n"
      "        h = self.cell(torch.cat([self.emb(y_prev), context], dim=-1), h)  # (B, H)",
      "        h = self.cell(torch.cat([self.emb(y_prev), h], dim=-1), h)\n"
      "        context, att = self.attention(h, enc_out, src_mask)", "decoder_new_state_query"),
    m("decoder_logits_old_state", RNN, "decoder_step",
      "        h = self.cell(torch.cat([self.emb(y_prev), context], dim=-1), h)  # (B, H)\n"
      "        logits = self.out(torch.cat([h, context], dim=-1))  # (B, V)\n"
      "        return logits, h, att",
      "        h_new = self.cell(torch.cat([self.emb(y_prev), context], dim=-1), h)\n"
      "        logits = self.out(torch.cat([h, context], dim=-1))\n"
      "        return logits, h_new, att", "decoder_logits_old_state"),
    m("grid_reshape", RNN, "grid_attention", "features.flatten(2).transpose(1, 2)",
      "features.reshape(B, H * W, C)", "grid_reshape"),
    m("grid_columns_first", RNN, "grid_attention",
      "cells = features.flatten(2).transpose(1, 2)  # (B, H*W, C), row-major cells\n"
      "    context, weights = attention(h, cells)\n    return context, weights.view(B, H, W)",
      "cells = features.transpose(2, 3).flatten(2).transpose(1, 2)  # column by column\n"
      "    context, weights = attention(h, cells)\n    return context, weights.view(B, H, W)",
      "grid_columns_first"),
    # --- transformer: LayerNorm, MLP
    m("layernorm_unbiased", TF, "layernorm", "var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)",
      "var = x.var(dim=-1, keepdim=True)", "ln_unbiased"),
    m("layernorm_eps_outside", TF, "layernorm", "torch.sqrt(var + self.eps)",
      "(torch.sqrt(var) + self.eps)", "ln_eps_outside"),
    m("layernorm_no_eps", TF, "layernorm", "torch.sqrt(var + self.eps)", "torch.sqrt(var)",
      "ln_no_eps"),
    # eps as a floor under the variance: the same as no eps wherever the variance is above
    # eps, so no cause may be named (a case with every variance below eps tells them apart)
    m("layernorm_eps_floor", TF, "layernorm", "torch.sqrt(var + self.eps)",
      "torch.sqrt(var.clamp(min=self.eps))", None),
    # the statistics over a flattened view of the input: fails on a non-contiguous input
    # (the hidden tests hand one over), with the hint that .view needs a contiguous tensor
    m("layernorm_view_input", TF, "layernorm", LN_STATS,
      "flat = x.view(-1, x.size(-1))  # (rows, d_model)\n"
      "        mean = flat.mean(dim=-1).view(*x.shape[:-1], 1)\n"
      "        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)", None),
    m("layernorm_no_affine", TF, "layernorm", LN_OUT, "(x - mean) / torch.sqrt(var + self.eps)",
      "ln_no_affine"),
    m("layernorm_no_mean", TF, "layernorm", LN_OUT,
      "x / torch.sqrt(var + self.eps) * self.weight + self.bias", "ln_no_mean"),
    m("layernorm_wrong_axis", TF, "layernorm", LN_STATS,
      LN_STATS.replace("dim=-1", "dim=0"), "ln_wrong_axis"),
    m("dropout_in_eval", TF, "mlp", "self.dropout(self.act(self.linear1(x)))",
      "F.dropout(self.act(self.linear1(x)), p=0.1)", None),
    m("mlp_no_activation", TF, "mlp", "self.dropout(self.act(self.linear1(x)))",
      "self.dropout(self.linear1(x))", "mlp_no_activation"),
    m("mlp_relu", TF, "mlp", "self.act(self.linear1(x))", "torch.relu(self.linear1(x))",
      "mlp_relu"),
    m("mlp_dropout_after_linear2", TF, "mlp", MLP_OUT,
      "self.dropout(self.linear2(self.act(self.linear1(x))))", "mlp_dropout_after_linear2"),
    m("mlp_no_dropout", TF, "mlp", MLP_OUT, "self.linear2(self.act(self.linear1(x)))",
      "mlp_no_dropout"),
    # --- transformer: block, decoder, greedy
    m("residual_missing", TF, "block", "x = x + self.self_attn(self.norm1(x))",
      "x = self.self_attn(self.norm1(x))", "no_residual_attn"),
    m("residual_mlp_missing", TF, "block", "x = x + self.mlp(self.norm2(x))",
      "x = self.mlp(self.norm2(x))", "no_residual_mlp"),
    m("pre_post_swapped", TF, "block", "if self.norm_first:", "if not self.norm_first:",
      "pre_post_swapped"),
    m("norms_swapped", TF, "block", "x = x + self.self_attn(self.norm1(x))\n"
      "            x = x + self.mlp(self.norm2(x))", "x = x + self.self_attn(self.norm2(x))\n"
      "            x = x + self.mlp(self.norm1(x))", "norms_swapped"),
    m("no_positions", TF, "decoder", "x = self.tok_emb(idx) + self.pos_emb(positions)",
      "x = self.tok_emb(idx)", "no_positions"),
    no_device("positions_on_cpu", TF, "decoder", "torch.arange(idx.size(1), device=idx.device)"),
    m("no_final_norm", TF, "decoder", "self.lm_head(self.ln_f(x))", "self.lm_head(x)",
      "no_final_norm"),
    # the cell's given constructor edited: the weights cannot be loaded (the message lists
    # each parameter whose shape differs, grader.checks.load_weights)
    m("block_mlp_width", TF, "block", "self.mlp = MLP(d_model, d_ff, dropout)",
      "self.mlp = MLP(d_model, 4 * d_model, dropout)", None),
    m("greedy_first_position", TF, "greedy", "logits[:, -1]", "logits[:, 0]",
      "greedy_first_position"),
    m("greedy_no_crop", TF, "greedy", "model(idx[:, -model.max_len:])", "model(idx)", None),
    # --- efficient_attention: the online softmax
    # NaN from the first block on (exp(m_new - m) with m = -inf), on every input: as a sum
    # started at -inf or an exp left out, so no cause may be named
    m("online_rescale_flipped", EA, "online_softmax", "l * torch.exp(m - m_new)",
      "l * torch.exp(m_new - m)", None),
    m("online_sum_not_rescaled", EA, "online_softmax", "l * torch.exp(m - m_new) + ", "l + ",
      "online_sum_not_rescaled"),
    m("online_max_not_running", EA, "online_softmax",
      "m_new = torch.maximum(m, xb.amax(dim=-1, keepdim=True))",
      "m_new = xb.amax(dim=-1, keepdim=True)", "online_max_not_running"),
    m("online_max_init_zero", EA, "online_softmax",
      'm = torch.full((*x.shape[:-1], 1), float("-inf")', "m = torch.full((*x.shape[:-1], 1), 0.0",
      "online_max_init_zero"),
    m("online_no_max", EA, "online_softmax",
      f"{ONLINE_L}\n        m = m_new\n    return torch.exp(x - m) / l, m, l",
      "l = l + torch.exp(xb).sum(dim=-1, keepdim=True)\n        m = m_new\n"
      "    return torch.exp(x) / l, m, l", "softmax_no_max"),
    no_device("online_max_on_cpu", EA, "online_softmax", "dtype=x.dtype, device=x.device)"),
    # --- efficient_attention: tiled attention, its memory, causal tiles
    m("tiled_output_not_rescaled", EA, "tiled_attention", "o = o * correction + p @ v",
      "o = o + p @ v", "tiled_output_not_rescaled"),
    m("tiled_not_scaled", EA, "tiled_attention", ".transpose(-2, -1) * scale", ".transpose(-2, -1)",
      "not_scaled"),
    m("tiled_one_big_tile", EA, "tiled_attention", "    L, S = q.size(-2), k.size(-2)\n",
      "    L, S = q.size(-2), k.size(-2)\n    block_q, block_k = L, S  # one tile: simpler\n",
      None),
    m("causal_tile_off_by_one", EA, "tiled_attention", "may_attend = cols <= rows",
      "may_attend = cols < rows", "causal_off_by_one"),
    m("causal_tile_mask_flipped", EA, "tiled_attention", "s.masked_fill(~may_attend,",
      "s.masked_fill(may_attend,", "mask_inverted"),
    m("causal_diagonal_tile_skipped", EA, "tiled_attention", "last = min(S, i1) if is_causal",
      "last = min(S, i0) if is_causal", "causal_diagonal_tiles_skipped"),
    m("causal_crossing_tile_unmasked", EA, "tiled_attention", "if is_causal and j1 - 1 > i0:",
      "if is_causal and j0 > i0:", "causal_tile_not_masked"),
    no_device("tiled_accumulator_on_cpu", EA, "tiled_attention",
              "o = torch.zeros(*qi.shape[:-1], v.size(-1), dtype=q.dtype, device=q.device)"),
    no_device("tiled_output_on_cpu", EA, "tiled_attention",
              "out = torch.empty(*q.shape[:-1], v.size(-1), dtype=q.dtype, device=q.device)"),
    no_device("causal_tile_mask_on_cpu", EA, "tiled_attention",
              "rows = torch.arange(i0, i1, device=q.device)[:, None]\n"
              "                cols = torch.arange(j0, j1, device=q.device)[None, :]"),
    # --- efficient_attention: the KV cache
    m("kv_cache_overwritten", EA, "kv_cache", "        if self.k is not None:",
      "        if False:", "kv_cache_overwritten"),
    m("kv_cache_appends_query", EA, "cached_lm", "k, v = cache.append(k, v)",
      "k, v = cache.append(q, v)", "kv_cache_appends_query"),
    m("kv_position_off_by_one", EA, "cached_lm", "self.pos_emb.weight[t]",
      "self.pos_emb.weight[t + 1]", "kv_position_off_by_one"),
    m("kv_recomputes_past", EA, "cached_lm",
      "                logits = self.step(next_id, idx.size(1) - 1, caches)",
      "                for t in range(idx.size(1)):  # the whole sequence again\n"
      "                    logits = self.step(idx[:, t:t + 1], t, caches)", "kv_recomputes_past"),
    # Device slips found by probing (each checked on an H100: test_device_check_gpu.py)
    m("sdpa_scale_as_cpu_vector", SA, "sdpa", SCALE,
      "q @ k.transpose(-2, -1) * torch.tensor([1 / math.sqrt(d)])", "stray_cpu_tensor"),
    m("mha_default_mask_on_cpu", SA, "mha", "        if mask is not None and mask.dim() == 3:",
      "        full = torch.ones(L, key.size(1), dtype=torch.bool)  # every key allowed\n"
      "        mask = full if mask is None else mask & full\n"
      "        if mask.dim() == 3:", "stray_cpu_tensor"),
    m("online_clamp_to_cpu_scalar", EA, "online_softmax",
      'm = torch.full((*x.shape[:-1], 1), float("-inf"), dtype=x.dtype, device=x.device)\n'
      "    l = torch.zeros_like(m)\n    for start in range(0, x.size(-1), block):\n"
      "        xb = x[..., start:start + block]  # (..., b): one block of columns\n"
      "        m_new = torch.maximum(m, xb.amax(dim=-1, keepdim=True))",
      'm = torch.tensor(float("-inf"), dtype=x.dtype)  # on the CPU\n'
      "    l = torch.zeros_like(m)\n    for start in range(0, x.size(-1), block):\n"
      "        xb = x[..., start:start + block]  # (..., b): one block of columns\n"
      "        m_new = xb.amax(dim=-1, keepdim=True).clamp(min=m)", "stray_cpu_tensor"),
    m("tiled_fill_values_on_cpu", EA, "tiled_attention",
      's = s.masked_fill(~may_attend, float("-inf"))',
      "r, c = torch.triu_indices(i1 - i0, j1 - j0, i0 - j0 + 1, device=q.device)\n"
      '                s[..., r, c] = torch.full((r.numel(),), float("-inf"), dtype=s.dtype)',
      "stray_cpu_tensor"),
    m("tiled_correction_moved_to_cpu", EA, "tiled_attention", "correction = torch.exp(m - m_new)",
      "correction = torch.exp(m - m_new).cpu()", "stray_cpu_tensor"),
    m("ln_eps_as_cpu_vector", TF, "layernorm", "torch.sqrt(var + self.eps)",
      "torch.sqrt(var + torch.tensor([self.eps]))", "stray_cpu_tensor"),
    m("block_result_on_cpu", TF, "block", "        return x",
      "        out = torch.zeros(x.shape)  # a fresh result tensor\n        out += x\n"
      "        return out", "stray_cpu_tensor"),
    # Found by probing with new slips: each was once blamed on a wrong cause
    m("mask_after_softmax_renormalised", RNN, "additive_attention",
      'if mask is not None:\n            scores = scores.masked_fill(~mask, float("-inf"))\n'
      "        weights = torch.softmax(scores, dim=-1)",
      "weights = torch.softmax(scores, dim=-1)\n        if mask is not None:\n"
      "            weights = weights * mask\n"
      "            weights = weights / weights.sum(dim=-1, keepdim=True)", "mask_after_softmax"),
    m("pe_base_100", SA, "positional_encoding", "10000 **", "100 **", "pe_exponent_i"),
    m("kv_append_result_ignored", EA, "cached_lm", "k, v = cache.append(k, v)",
      "cache.append(k, v)", "kv_cache_overwritten"),
    m("kv_append_returns_the_new_only", EA, "kv_cache",
      "        if self.k is not None:  # the earlier positions first, the new ones after them\n"
      "            k = torch.cat([self.k, k], dim=-2)\n"
      "            v = torch.cat([self.v, v], dim=-2)\n"
      "        self.k, self.v = k, v\n"
      "        return k, v",
      "        if self.k is None:\n"
      "            self.k, self.v = k, v\n"
      "        else:\n"
      "            self.k = torch.cat([self.k, k], dim=-2)\n"
      "            self.v = torch.cat([self.v, v], dim=-2)\n"
      "        return k, v", "kv_cache_overwritten"),
    # --- tiny_gpt (the capstone): rotary positions
    # the pairs (x[i], x[i + d/2]), rejoined as halves: the other common layout of RoPE
    m("rotary_halves", TG, "rotary",
      "    x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., T, d/2): the pairs' two coordinates\n"
      "    turned = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)"
      "  # (..., T, d/2, 2)\n    return turned.flatten(-2)",
      "    x1, x2 = x[..., : d // 2], x[..., d // 2:]  # the two halves\n"
      "    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)",
      "rotary_halves"),
    m("rotary_ignores_start", TG, "rotary", "torch.arange(start, start + T,",
      "torch.arange(0, T,", "rotary_ignores_start"),
    m("rotary_backwards", TG, "rotary", "[x1 * cos - x2 * sin, x1 * sin + x2 * cos]",
      "[x1 * cos + x2 * sin, -x1 * sin + x2 * cos]", "rotary_backwards"),
    m("rotary_frequencies", TG, "rotary", "10000.0 ** (-2 * i / d)", "10000.0 ** (-i / d)",
      "rotary_frequencies"),
    # --- tiny_gpt: grouped-query attention with a cache
    m("gqa_heads_tiled", TG, "attention",
      "        k_all = k.repeat_interleave(group, dim=1)  # (B, n_head, t + T, d_head)\n"
      "        v_all = v.repeat_interleave(group, dim=1)",
      "        k_all = k.repeat(1, group, 1, 1)\n        v_all = v.repeat(1, group, 1, 1)",
      "gqa_heads_tiled"),
    m("cache_rotary_not_offset", TG, "attention", "apply_rotary(q, t), apply_rotary(k, t)",
      "apply_rotary(q), apply_rotary(k)", "rotary_ignores_start"),
    m("cache_mask_not_offset", TG, "attention", ".tril(diagonal=t)", ".tril()",
      "cache_mask_not_offset"),
    # the whole cache turned again with the new positions' angles: wrong only after a cache
    m("cache_turned_again", TG, "attention",
      "        q, k = apply_rotary(q, t), apply_rotary(k, t)\n"
      "        if k_past is not None:\n"
      "            k = torch.cat([k_past, k], dim=2)  # (B, n_kv_head, t + T, d_head)",
      "        q = apply_rotary(q, t)\n"
      "        if k_past is not None:\n"
      "            k = torch.cat([k_past, k], dim=2)  # (B, n_kv_head, t + T, d_head)\n"
      "        k = apply_rotary(k)", None),
    m("gqa_softmax_over_queries", TG, "attention",
      'scores.masked_fill(~allowed, float("-inf")), dim=-1)',
      'scores.masked_fill(~allowed, float("-inf")), dim=-2)', None),
    m("gqa_not_scaled", TG, "attention", " / math.sqrt(self.d_head)", "", None),
    # --- tiny_gpt: the blocks and the model
    m("block_no_residual", TG, "model", "        x = x + a\n", "        x = a\n", None),
    m("block_post_norm", TG, "model",
      "        a, k, v = self.attn(self.norm1(x), k_past, v_past)\n        x = x + a\n"
      "        x = x + self.mlp(self.norm2(x))",
      "        a, k, v = self.attn(x, k_past, v_past)\n        x = self.norm1(x + a)\n"
      "        x = self.norm2(x + self.mlp(x))", None),
    m("model_no_final_norm", TG, "model", "self.lm_head(self.norm(x))", "self.lm_head(x)", None),
    m("model_first_layer_cache_everywhere", TG, "model",
      "block(x, k_cache[i], v_cache[i])", "block(x, k_cache[0], v_cache[0])", None),
    # --- tiny_gpt: generation with the cache
    m("generate_refeeds_all", TG, "generate", "model(next_id, k_cache, v_cache)",
      "model(idx, k_cache, v_cache)", "kv_recomputes_past"),
    m("generate_cache_not_kept", TG, "generate",
      "logits, k_cache, v_cache = model(next_id, k_cache, v_cache)",
      "logits, _, _ = model(next_id, k_cache, v_cache)", None),
    m("generate_first_position", TG, "generate", "logits[:, -1].argmax", "logits[:, 0].argmax",
      None),
]

# Correct by-hand answers in every form the text allows: each must earn full marks.
FR = "from fractions import Fraction as Fr\n"
FORMS = [
    m("form_fractions", BH, "answer_A", "A = " + A_SOURCE, FR + "A = [[Fr(1, 14), Fr(9, 22), "
      "Fr(1, 6), Fr(3, 6)], [Fr(9, 14), Fr(9, 22), Fr(3, 6), Fr(1, 6)],\n     [Fr(1, 14), "
      "Fr(3, 22), Fr(1, 6), Fr(1, 6)], [Fr(3, 14), Fr(1, 22), Fr(1, 6), Fr(1, 6)]]", None),
    # numpy makes an array of Fractions or Decimals one of objects, which the sandbox cannot
    # send as numbers: read through the student's process (grader.checks.compare)
    m("form_numpy_fractions", BH, "answer_A", "A = " + A_SOURCE,
      "import numpy as np\n" + FR + "A = np.array([[Fr(1, 14), Fr(9, 22), Fr(1, 6), Fr(3, 6)],"
      "\n     [Fr(9, 14), Fr(9, 22), Fr(3, 6), Fr(1, 6)], [Fr(1, 14), Fr(3, 22), Fr(1, 6), "
      "Fr(1, 6)],\n     [Fr(3, 14), Fr(1, 22), Fr(1, 6), Fr(1, 6)]])", None),
    m("form_numpy_decimals", BH, "answer_Z", "Z = " + Z_SOURCE,
      "import numpy as np\nfrom decimal import Decimal as D\n"
      "Z = np.array([[D('1.64'), D('1.41'), D('1.50'), D('1.17')],\n"
      "     [D('0.71'), D('0.82'), D('0.67'), D('0.67')],\n"
      "     [D('-0.57'), D('-0.27'), D('-0.33'), D('0.00')]], dtype=object)", None),
    m("form_decimals", BH, "answer_Z", "Z = " + Z_SOURCE,
      "from decimal import Decimal as D\nZ = [[D('1.64'), D('1.41'), D('1.50'), D('1.17')],\n"
      "     [D('0.71'), D('0.82'), D('0.67'), D('0.67')],\n"
      "     [D('-0.57'), D('-0.27'), D('-0.33'), D('0.00')]]", None),
    m("form_numpy", BH, "answer_scores",
      "scores = [[1, 4, 1, 2], [5, 4, 3, 1], [0, 2, 0, 1], [2, 1, 1, 0]]",
      "import numpy as np\nscores = np.array([[1, 4, 1, 2], [5, 4, 3, 1], [0, 2, 0, 1], "
      "[2, 1, 1, 0]])", None),
    m("form_int_tensor", BH, "answer_Q", "Q = [[2, 1, 1, 0], [0, 2, 0, 1], [1, 0, 1, 0]]",
      "Q = torch.tensor([[2, 1, 1, 0], [0, 2, 0, 1], [1, 0, 1, 0]])", None),
    m("form_tuples", BH, "answer_V", "V = [[1, 2, 1, 1], [1, 1, 0, 0], [0, -1, 1, 0]]",
      "V = ((1, 2, 1, 1), (1, 1, 0, 0), (0, -1, 1, 0))", None),
    m("form_numpy_scalars", BH, "answer_scaled", "scaled = [[0, 2, 0, 1]",
      "import numpy as np\nscaled = [[np.int64(0), np.float32(2), 0, 1]", None),
    m("form_float_tensor", BH, "answer_K", "K = [[0, 2, 0, 1], [2, 1, 1, 0], [1, 1, 0, 0]]",
      "K = torch.tensor([[0, 2, 0, 1], [2, 1, 1, 0], [1, 1, 0, 0]], dtype=torch.float32)", None),
]
