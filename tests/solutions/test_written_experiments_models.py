"""The model answers of rnn_attention's and transformer's open-ended experiments state figures
these computations give (each with the seed and order of draws the answer names). The reference
modules draw their weights in the same order as the notebooks' own classes, so a student running
the notebook with that seed gets the same table."""

from __future__ import annotations

from pathlib import Path

import nbformat
import torch
import torch.nn.functional as F
from torch import nn

import solutions

# (not grader.course: `make cuda-check` collects tests/solutions where nbgrader is absent)
REPO = Path(__file__).resolve().parents[2]


def answer(assignment: str, grade_id: str) -> str:
    nb = nbformat.read(REPO / "assignments" / assignment / f"{assignment}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return cell.source


def power_of_ten(x: float, digits: int) -> str:
    """x as the answer writes it in words: $3 \\times 10^{-7}$ (digits after the point)."""
    mantissa, exponent = f"{x:.{digits}e}".split("e")
    return f"${mantissa} \\times 10^{{{int(exponent)}}}$"


# rnn_attention: the notebook's Translator (d_emb=32, d_hidden=64, d_att=32) and VOCAB, BOS
VOCAB, BOS = 15, 1


def translator_gradients(seed: int, S: int = 32, B: int = 100):
    """One decoder step of an untrained Translator on B random sentences of S words, with
    attention over every encoder output and with the last one only. -> ({kind: (S,) mean
    gradient norm per source position}, attention weights (B, S), update gates (B, S, 64))."""
    torch.manual_seed(seed)
    src_emb = nn.Embedding(VOCAB, 32)  # Translator.__init__'s order: src_emb, encoder, decoder
    gru = nn.GRU(32, 64, batch_first=True)
    decoder = solutions.AttentionDecoder(VOCAB, 32, 64, 32)  # DecoderStep's order
    src = torch.randint(3, VOCAB, (B, S))
    grads = {}
    for kind in ("attention", "last state only"):
        emb = src_emb(src).detach().requires_grad_()
        enc_out, _ = gru(emb)
        keys = enc_out if kind == "attention" else enc_out[:, -1:]
        logits, _, att = decoder.step(torch.full((B,), BOS), enc_out[:, -1], keys)
        if kind == "attention":
            weights = att.detach()
        F.cross_entropy(logits, src[:, -1], reduction="sum").backward()
        grads[kind] = emb.grad.norm(dim=-1).mean(0)
    with torch.no_grad():  # the GRU's update gate z (PyTorch's gate order: r, z, n)
        x = emb.detach()
        previous = torch.cat([torch.zeros(B, 1, 64), enc_out[:, :-1].detach()], dim=1)
        z = torch.sigmoid((x @ gru.weight_ih_l0.T + gru.bias_ih_l0)[..., 64:128]
                          + (previous @ gru.weight_hh_l0.T + gru.bias_hh_l0)[..., 64:128])
    return grads, weights, z


def test_rnn_attention_gradient_table_and_claims():
    text = answer("rnn_attention", "experiment_gradients")
    grads, att, z = translator_gradients(0)
    with_att, last = grads["attention"], grads["last state only"]
    for i in (31, 30, 29, 27, 23, 15, 0):
        row = f"| {i} | {31 - i} | {with_att[i]:.1e} | {last[i]:.1e} |"
        assert row in text, row
    # without attention: an almost constant factor per position, about 0.62
    fall = (last[0] / last[31]).item()
    assert f"about {fall ** (1 / 31):.2f}, for each" in text
    steps = last[:-1] / last[1:]  # each position's gradient over the next one's
    assert ((steps[:-4] > 0.55) & (steps[:-4] < 0.7)).all()  # constant once past the last few
    assert f"about {power_of_ten(fall, 0)} of the last word's gradient" in text
    # with attention: level from eight positions back (positions 0..23), whatever the position
    level = with_att[:24]
    assert (f"between {power_of_ten(level.min().item(), 1)} and "
            f"{power_of_ten(level.max().item(), 1)}") in text
    first = (with_att[0] / last[0]).item()
    assert f"about {round(first, -4):,.0f} times more" in text
    assert (with_att[27:] < last[27:]).all()  # the last few words get less with attention
    # the explanation's figures: the update gate, the untrained weights, the level's 1/S
    assert f"averages {z.mean().item():.2f}" in text
    assert f"between {att.min().item():.3f}\nand {att.max().item():.3f}" in text
    assert (att - 1 / 32).abs().max() < 0.01
    grads64, _, _ = translator_gradients(0, S=64)
    drop = (level.mean() / grads64["attention"][:56].mean()).item()
    assert f"drops by a factor of {drop:.1f}" in text
    # the mark scheme: another seed gives the same orders of magnitude
    for seed in (1, 2, 3):
        other, _, _ = translator_gradients(seed)
        assert 4e-3 < other["attention"][:24].min() <= other["attention"][:24].max() < 6e-3
        assert 1e-8 < other["last state only"][0] < 1e-7


# transformer: Block(64, 4, 256) is a TransformerBlock with GELU, called causally
DEPTHS = (1, 2, 4, 8, 16, 32, 64)


def residual_stream(seed: int):
    """{(norm_first, depth): (RMS of the stream, mean cosine with the input)} for x0 passed
    through the same 64 untrained blocks, in pre-norm form and then in post-norm form."""
    torch.manual_seed(seed)
    x0 = torch.randn(8, 16, 64)
    blocks = [solutions.TransformerBlock(64, 4, 256, norm_first=True, activation="gelu").eval()
              for _ in range(max(DEPTHS))]
    figures = {}
    with torch.no_grad():
        for norm_first in (True, False):
            x = x0
            for depth, block in enumerate(blocks, 1):
                block.norm_first = norm_first
                x = block(x, is_causal=True)
                figures[norm_first, depth] = (x.pow(2).mean().sqrt().item(),
                                              F.cosine_similarity(x, x0, dim=-1).mean().item())
    return figures


def test_transformer_residual_table_and_claims():
    text = answer("transformer", "experiment_residual")
    fig = residual_stream(0)
    for L in DEPTHS:
        (pre_rms, pre_cos), (post_rms, post_cos) = fig[True, L], fig[False, L]
        row = f"| {L} | {pre_rms:.2f} | {pre_cos:.2f} | {post_rms:.2f} | {post_cos:.2f} |"
        assert row in text, row
        assert f"{post_rms:.2f}" == "1.00"  # "an RMS of 1.00 by construction"
    # pre-norm: the squared RMS grows by 0.07 to 0.11 per block on average
    growth = [(fig[True, L][0] ** 2 - 1) / L for L in DEPTHS]
    assert f"by {min(growth):.2f} to {max(growth):.2f} per block" in text
    # ... and the cosine is the reciprocal of the RMS, within 1%
    assert "within 1% of 1" in text
    assert all(abs(fig[True, L][0] * fig[True, L][1] - 1) < 0.01 for L in DEPTHS)
    # post-norm: the first block's addition, and the compounding loss
    rms1 = fig[True, 1][0]
    assert f"about {round(100 * (rms1 ** 2 - 1))}% to the squared norm" in text
    assert f"after one block is {rms1 ** 2:.2f})" in text
    assert f"leaves the input a cosine of {fig[False, 1][1]:.2f}" in text
    factors = [fig[False, L][1] ** (1 / L) for L in DEPTHS]
    assert f"a factor between {min(factors):.2f} and {max(factors):.2f} per block" in text
    assert (f"to {fig[False, 8][1]:.2f} after 8 blocks, {fig[False, 32][1]:.2f} after 32 and "
            f"{fig[False, 64][1]:.2f} after 64") in text
    assert fig[False, 64][1] < 0.05 < 0.3 < fig[True, 64][1]  # the contrast the answer draws
    # the mark scheme: another seed is within about 0.1 of the table
    for seed in (1, 2):
        other = residual_stream(seed)
        assert all(abs(a - b) < 0.1 for L in DEPTHS for form in (True, False)
                   for a, b in zip(other[form, L], fig[form, L], strict=True))
