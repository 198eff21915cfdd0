"""The causes a failure message may name, one sentence each.

A message names a cause only when it is verified: the mistake's variant reproduces the student's
output (see reference.py), or the failure itself proves it (an error only that slip raises).
Every message names a cause in the same words, so the class report counts one row per cause.
"""

from __future__ import annotations

import re

CAUSES = {
    # softmax, written by hand
    "softmax_no_max": "the maximum was not subtracted before exp, so exp overflows "
                      "(inf / inf = NaN) or underflows (0 / 0 = NaN) on large scores",
    "softmax_min": "the minimum was subtracted before exp instead of the maximum, so exp "
                   "overflows on scores that are far apart",
    "softmax_global_max": "the maximum of the whole tensor was subtracted instead of each "
                          "slice's maximum along dim, so small slices underflow to 0 / 0",
    "softmax_ignores_dim": "the dim argument is ignored (always the last axis)",
    "softmax_whole_tensor": "the exponentials were divided by the sum of the whole tensor "
                            "instead of the sum along dim",
    "softmax_other_axis": "the softmax was normalised along the wrong axis",
    # scaled dot-product attention and masks
    "softmax_over_queries": "the softmax was taken over the wrong axis: the queries (dim=-2) "
                            "instead of the keys (dim=-1)",
    "softmax_over_batch": "the softmax was taken over the batch (dim=0) instead of the keys",
    "not_scaled": "the scores were not divided by sqrt(d)",
    "scaled_by_d": "the scores were divided by d instead of sqrt(d)",
    "scale_multiplied": "the scores were multiplied by sqrt(d) instead of divided by it",
    "scaled_by_keys": "the scores were divided by sqrt(number of keys) instead of sqrt(d)",
    "mask_after_softmax": "the mask was applied after the softmax (set masked scores to -inf "
                          "before it)",
    "mask_zero_fill": "masked scores were filled with 0 instead of -inf",
    "mask_ignored": "the mask was ignored",
    "mask_inverted": "the mask was inverted (True means 'may attend')",
    "returned_scores": "the scores were returned instead of the weights",
    # causal mask and positions
    "causal_off_by_one": "the diagonal is masked (off by one: a query may attend to itself)",
    "causal_transposed": "the mask is transposed (query i may attend to keys 0..i, not i..T-1)",
    "causal_inverted": "True and False are swapped (True means 'may attend')",
    "device_ignored": "the device argument is ignored (create tensors with device=device)",
    "stray_cpu_tensor": "a tensor is made on the CPU (created without device=, or moved "
                        "there) instead of on the device of the inputs or the one asked for",
    "device_hard_coded": "a device is hard-coded (use the device of the inputs or the device "
                         "argument)",
    "pe_sin_cos_swapped": "sine and cosine are swapped (sines go in the even columns)",
    "pe_exponent_i": "the frequencies fall as 10000^(-i/d) instead of 10000^(-2i/d): the "
                     "exponent uses i instead of 2i (or the base is 100, the same table)",
    "pe_multiplied": "the angle is multiplied by 10000^(2i/d) instead of divided",
    "pe_base": "the base of the frequencies is not 10000",
    # multi-head attention
    "heads_split_no_transpose": "the heads were split with view/reshape but without "
                                "transpose(1, 2), so each 'head' mixes several tokens",
    "heads_merge_no_transpose": "the heads were merged back without transpose(1, 2) before "
                                "the reshape",
    "no_out_proj": "the output projection (out_proj) was not applied",
    "scaled_by_d_model": "the scores were scaled by sqrt(d_model) instead of sqrt(d_head)",
    "mha_not_scaled": "the scores were not divided by sqrt(d_head)",
    "key_value_swapped": "the key and value inputs are swapped",
    "value_uses_k_proj": "the values were projected with k_proj instead of v_proj",
    "q_k_proj_swapped": "q_proj and k_proj are swapped",
    # soft select and pooling
    "temperature_multiplied": "the scores were multiplied by the temperature instead of "
                              "divided by it",
    "temperature_ignored": "the temperature was ignored",
    "averaged_keys": "the weights averaged the keys instead of the values",
    "hard_select_any": "a key matched when any coordinate equals the query's (use .all over "
                       "the coordinates)",
    "hard_select_normalised": "the weights were normalised, so repeated keys share one "
                              "weight instead of each getting 1",
    "kernel_sign": "the minus sign is missing, so far points get the most weight",
    "kernel_no_two": "the squared distance was divided by h^2 instead of 2 h^2",
    "kernel_not_squared": "the distance was not squared (|x - x_i| instead of (x - x_i)^2)",
    "bandwidth_not_squared": "the bandwidth was not squared (2 h instead of 2 h^2)",
    # by hand
    "paper_weight_transposed": "the weight matrix was transposed (W^T X instead of W X)",
    "paper_scores_transposed": "the scores are transposed (Q^T K instead of K^T Q)",
    "paper_rounded": "rounded to the nearest integer instead of rounding down",
    "paper_ceil": "rounded up instead of down",
    "paper_rows_normalised": "each row was normalised instead of each column",
    "paper_base_e": "e^x was used instead of 3^x",
    "paper_unscaled": "the weights were computed from the scores before scaling",
    "paper_z_transposed": "Z was computed as V A^T",
    # additive attention and the decoder
    "additive_no_tanh": "tanh is missing (the score is then linear in q and k)",
    "additive_relu": "ReLU was used instead of tanh",
    "grid_reshape": "the grid was flattened with reshape(B, H*W, C) instead of "
                    "flatten(2).transpose(1, 2), mixing channels and cells",
    "grid_columns_first": "the cells were read column by column instead of row by row",
    "decoder_new_state_query": "the attention was queried with the new state instead of the "
                               "previous state",
    "decoder_logits_old_state": "the logits were computed from the previous state instead of "
                                "the new one",
    # transformer
    "ln_unbiased": "the variance is the unbiased one (divides by d - 1, not d)",
    "ln_eps_outside": "eps was added outside the square root",
    "ln_no_eps": "eps was left out",
    "ln_no_affine": "the weight and bias were not applied",
    "ln_no_mean": "the mean was not subtracted",
    "ln_wrong_axis": "the statistics were taken over the wrong axis (not the features)",
    "pre_post_swapped": "this form computes the other one (post-norm where norm_first=True "
                        "asks for pre-norm, or the reverse): check the norm_first branch",
    "no_residual_attn": "the residual connection around attention is missing",
    "no_residual_mlp": "the residual connection around the MLP is missing",
    "norms_swapped": "norm1 and norm2 are swapped",
    "mlp_no_activation": "the activation is missing",
    "mlp_relu": "ReLU was used instead of GELU",
    "dropout_in_eval": "dropout is still active in evaluation mode",
    "mlp_dropout_after_linear2": "dropout was applied after linear2 (it belongs between the "
                                 "activation and linear2)",
    "mlp_no_dropout": "self.dropout is never applied, so training runs without dropout",
    "no_positions": "the position embeddings were not added",
    "no_final_norm": "the final LayerNorm (ln_f) was not applied",
    "greedy_first_position": "the next token was taken from the first position's logits, not "
                             "the last",
    "greedy_no_crop": "the input was not cropped to the last max_len tokens",
    # efficient attention: the online softmax, tiled attention, the KV cache
    "online_rescale_flipped": "the running sum was rescaled by exp(m_new - m) instead of "
                              "exp(m - m_new) when the maximum grew",
    "online_sum_not_rescaled": "the running sum was not rescaled by exp(m - m_new) when a block "
                               "brought a larger maximum",
    "online_max_not_running": "the running maximum was replaced by each block's own maximum "
                              "instead of the larger of the two",
    "online_max_init_zero": "the running maximum started at 0 instead of -inf, so rows whose "
                            "scores are all negative get the wrong maximum",
    "tiled_output_not_rescaled": "the running output o was not rescaled by exp(m - m_new) when "
                                 "the maximum grew (only the running sum was)",
    "causal_diagonal_tiles_skipped": "the tiles on the diagonal were skipped too (only tiles "
                                     "whose keys all come after every query may be skipped)",
    "causal_tile_not_masked": "a tile that crosses the diagonal was computed without the mask "
                              "(mask every tile that holds a key later than its first query)",
    "kv_cache_overwritten": "each new token attends only to itself: the cache was overwritten "
                            "instead of extended, or the step attended to the new key and value "
                            "alone instead of all that the cache holds",
    "kv_cache_appends_query": "the query was appended to the cache instead of the key",
    "kv_position_off_by_one": "the new token got the position embedding of t + 1 instead of t",
    "kv_recomputes_past": "every step fed all the tokens so far through the model again, so the "
                          "cache holds each past position several times (feed only the newest "
                          "token)",
    # the capstone: rotary positions, grouped-query attention with a cache
    "rotary_halves": "the coordinates were paired as the vector's two halves (x[i], x[i + d/2]) "
                     "instead of neighbours (x[2i], x[2i + 1])",
    "rotary_ignores_start": "new positions after a cache were turned as if they were the "
                            "first ones: apply_rotary ignores `start`, or the attention does "
                            "not pass the number of cached positions as `start`",
    "rotary_backwards": "the pairs were turned the wrong way (the sine's sign is flipped)",
    "rotary_frequencies": "the frequencies were 10000^(-i/d) instead of 10000^(-2i/d)",
    "gqa_heads_tiled": "the key and value heads were repeated as a block (repeat) instead of "
                       "each for its group of consecutive query heads (repeat_interleave)",
    "cache_mask_not_offset": "the causal mask was not shifted by the cached positions: new "
                             "queries may see only the first keys (use tril(diagonal=t))",
    # found from the error itself
    "inplace_input": "the function changes its input tensor in place",
}

LINE = re.compile(r"^Likely cause: (.+?)\.?$", re.MULTILINE)
_BY_TEXT = {text: cause for cause, text in CAUSES.items()}


def cause_lines(causes) -> str:
    """The lines naming verified causes, to append to a message ('' when there are none)."""
    return "".join(f"\nLikely cause: {CAUSES[c]}." for c in causes)


def named_causes(message: str) -> list[str]:
    """The causes a message names: ids where the sentence is in CAUSES, else the sentence."""
    return [_BY_TEXT.get(text, text) for text in LINE.findall(message)]
