"""The catalogue of common mistakes: realistic slips, each a small edit to a correct answer.

Each entry says which assignment and solution cell it changes, the exact text it replaces, and
`cause`: words the failure messages should contain when the grader names the likely cause
(None where the test can only say that something is wrong). tests/catalogue/test_catalogue.py
proves that every mistake loses points on a hidden test and that most failures name the cause.
"""

from dataclasses import dataclass

from grader.demo.sample_class import Edit


@dataclass(frozen=True)
class Mistake:
    id: str
    assignment: str
    edit: Edit
    cause: str | None  # expected (case-insensitive) in a failure message


def m(id, assignment, cell, old, new, cause):
    return Mistake(id, assignment, Edit(cell, old, new), cause)


SA, SS, BH, RNN, TF = "self_attention", "soft_select", "by_hand", "rnn_attention", "transformer"

MISTAKES = [
    # --- self_attention: scaled dot-product attention and masks
    m("softmax_wrong_axis", SA, "sdpa", "torch.softmax(scores, dim=-1)",
      "torch.softmax(scores, dim=-2)", "wrong axis"),
    m("no_scale", SA, "sdpa", "/ math.sqrt(d)", "", "not divided by sqrt(d)"),
    m("scale_by_d", SA, "sdpa", "/ math.sqrt(d)", "/ d", "divided by d instead of sqrt(d)"),
    m("mask_after_softmax", SA, "sdpa",
      "    if mask is not None:\n        scores = scores.masked_fill(~mask, float(\"-inf\"))\n"
      "    att = torch.softmax(scores, dim=-1)",
      "    att = torch.softmax(scores, dim=-1)\n    if mask is not None:\n"
      "        att = att.masked_fill(~mask, 0.0)", "after the softmax"),
    m("mask_filled_with_zero", SA, "sdpa", 'masked_fill(~mask, float("-inf"))',
      "masked_fill(~mask, 0.0)", "filled with 0 instead of -inf"),
    m("mask_inverted", SA, "sdpa", 'masked_fill(~mask, float("-inf"))',
      'masked_fill(mask, float("-inf"))', "inverted"),
    m("causal_off_by_one", SA, "causal_mask", ".tril()", ".tril(-1)", "off by one"),
    m("causal_transposed", SA, "causal_mask", ".tril()", ".triu()", "transposed"),
    m("cpu_tensor_in_function", SA, "causal_mask", ", device=device)", ")", "device="),
    m("hard_coded_cuda", SA, "causal_mask", "device=device)", 'device="cuda")', "cuda"),
    # --- self_attention: multi-head attention and positions
    m("heads_without_transpose", SA, "mha",
      "x.view(B, -1, self.n_head, self.d_head).transpose(1, 2)",
      "x.view(B, self.n_head, -1, self.d_head)", "split with view/reshape but without"),
    m("merge_without_transpose", SA, "mha", "y.transpose(1, 2).reshape(B, L, self.d_model)",
      "y.reshape(B, L, self.d_model)", "merged back without transpose"),
    m("no_output_projection", SA, "mha", "return self.out_proj(y), att", "return y, att",
      "out_proj"),
    m("scale_by_d_model", SA, "mha", "scaled_dot_product_attention(q, k, v, mask)",
      "scaled_dot_product_attention(q * math.sqrt(self.d_head / self.d_model), k, v, mask)",
      "sqrt(d_model) instead of sqrt(d_head)"),
    m("sin_cos_swapped", SA, "positional_encoding",
      "pe[:, 0::2] = torch.sin(angle)\n    pe[:, 1::2] = torch.cos(angle)",
      "pe[:, 0::2] = torch.cos(angle)\n    pe[:, 1::2] = torch.sin(angle)", "swapped"),
    m("pe_exponent_i", SA, "positional_encoding", "10000 ** (two_i / d_model)",
      "10000 ** (two_i / 2 / d_model)", "i instead of 2i"),
    # --- soft_select
    m("softmax_overflow", SS, "softmax", "z = x - x.amax(dim=dim, keepdim=True)", "z = x",
      "maximum was not subtracted"),
    m("softmax_ignores_dim", SS, "softmax",
      "z = x - x.amax(dim=dim, keepdim=True)  # the largest entry becomes 0\n"
      "    e = torch.exp(z)\n    return e / e.sum(dim=dim, keepdim=True)",
      "z = x - x.amax(dim=-1, keepdim=True)\n    e = torch.exp(z)\n"
      "    return e / e.sum(dim=-1, keepdim=True)", "dim argument is ignored"),
    m("temperature_multiplied", SS, "soft_select", "/ temperature", "* temperature",
      "multiplied by the temperature"),
    m("kernel_sign", SS, "attention_pooling", "softmax(-diff**2", "softmax(diff**2",
      "minus sign"),
    m("kernel_no_two", SS, "attention_pooling", "(2 * bandwidth**2)", "(bandwidth**2)",
      "instead of 2 h^2"),
    # --- by_hand (each step judged from the student's own previous steps)
    m("scores_transposed", BH, "answer_scores",
      "[[1, 4, 1, 2], [5, 4, 3, 1], [0, 2, 0, 1], [2, 1, 1, 0]]",
      "[[1, 5, 0, 2], [4, 4, 2, 1], [1, 3, 0, 1], [2, 1, 1, 0]]", "transposed"),
    m("rounded_not_floored", BH, "answer_scaled",
      "[[0, 2, 0, 1], [2, 2, 1, 0], [0, 1, 0, 0], [1, 0, 0, 0]]",
      "[[0, 2, 0, 1], [2, 2, 2, 0], [0, 1, 0, 0], [1, 0, 0, 0]]", "nearest integer"),
    m("rows_normalised", BH, "answer_A",
      "[[1/14, 9/22, 1/6, 3/6],\n     [9/14, 9/22, 3/6, 1/6],\n     [1/14, 3/22, 1/6, 1/6],\n"
      "     [3/14, 1/22, 1/6, 1/6]]",
      "[[0.071, 0.643, 0.071, 0.214], [0.409, 0.409, 0.136, 0.045],\n"
      "     [0.167, 0.5, 0.167, 0.167], [0.5, 0.167, 0.167, 0.167]]", "rows sum to 1"),
    m("base_e_not_3", BH, "answer_A",
      "[[1/14, 9/22, 1/6, 3/6],\n     [9/14, 9/22, 3/6, 1/6],\n     [1/14, 3/22, 1/6, 1/6],\n"
      "     [3/14, 1/22, 1/6, 1/6]]",
      "[[0.083, 0.399, 0.175, 0.475], [0.61, 0.399, 0.475, 0.175],\n"
      "     [0.083, 0.147, 0.175, 0.175], [0.225, 0.054, 0.175, 0.175]]", "e^x was used"),
    # --- rnn_attention
    m("additive_no_tanh", RNN, "additive_attention",
      "torch.tanh(self.W_q(query).unsqueeze(1) + self.W_k(keys))",
      "self.W_q(query).unsqueeze(1) + self.W_k(keys)", "tanh is missing"),
    m("additive_pad_zero", RNN, "additive_attention", 'scores.masked_fill(~mask, float("-inf"))',
      "scores.masked_fill(~mask, 0.0)", "filled with 0 instead of -inf"),
    m("grid_reshape", RNN, "grid_attention", "features.flatten(2).transpose(1, 2)",
      "features.reshape(B, H * W, C)", "reshape(B, H*W, C)"),
    m("decoder_new_state_query", RNN, "decoder_step",
      "        context, att = self.attention(h, enc_out, src_mask)  # (B, H), (B, S)\n"
      "        h = self.cell(torch.cat([self.emb(y_prev), context], dim=-1), h)  # (B, H)",
      "        h = self.cell(torch.cat([self.emb(y_prev), h], dim=-1), h)\n"
      "        context, att = self.attention(h, enc_out, src_mask)", "previous state"),
    # --- transformer
    m("layernorm_unbiased", TF, "layernorm", "var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)",
      "var = x.var(dim=-1, keepdim=True)", "unbiased"),
    m("layernorm_eps_outside", TF, "layernorm", "torch.sqrt(var + self.eps)",
      "(torch.sqrt(var) + self.eps)", "eps was added outside"),
    m("layernorm_wrong_axis", TF, "layernorm",
      "mean = x.mean(dim=-1, keepdim=True)\n"
      "        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)",
      "mean = x.mean(dim=0, keepdim=True)\n"
      "        var = ((x - mean) ** 2).mean(dim=0, keepdim=True)",
      "wrong axis"),
    m("residual_missing", TF, "block", "x = x + self.self_attn(self.norm1(x))",
      "x = self.self_attn(self.norm1(x))", "residual connection around attention"),
    m("pre_post_swapped", TF, "block", "if self.norm_first:", "if not self.norm_first:",
      "swapped"),
    m("dropout_in_eval", TF, "mlp", "self.dropout(self.act(self.linear1(x)))",
      "F.dropout(self.act(self.linear1(x)), p=0.1)", "dropout is still active"),
    m("mlp_no_activation", TF, "mlp", "self.dropout(self.act(self.linear1(x)))",
      "self.dropout(self.linear1(x))", "activation is missing"),
]
