"""The model answers of the assignments' open-ended experiments state figures these
computations give (each with the seed and order of draws the answer names)."""

from __future__ import annotations

import math
from itertools import pairwise
from pathlib import Path

import nbformat
import pytest
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


def test_self_attention_spread_table_and_gap():
    text = answer("self_attention", "experiment_spread")
    g = torch.Generator().manual_seed(0)
    rows = {}
    for n in (4, 16, 64, 256, 1024):
        q = torch.randn(500, 1, 64, generator=g)
        k = torch.randn(500, n, 64, generator=g)
        v = torch.randn(500, n, 8, generator=g)
        _, a = solutions.scaled_dot_product_attention(q, k, v)
        largest = a.max(-1).values.mean().item()
        entropy = -(a * a.clamp_min(1e-30).log()).sum(-1).mean().item()
        rows[n] = (largest, entropy)
        shown = f"{largest:.2f}" if largest >= 0.1 else f"{largest:.3f}"
        assert f"| {n} | {shown} | {entropy:.2f} | {math.log(n):.2f} |" in text, n
    # the best key's multiple of the uniform share, as the answer states it
    assert round(4 * rows[4][0]) == 2 and round(1024 * rows[1024][0]) == 16
    # the gap log N - H settles near sigma^2 / 2 = 0.5 for unit-variance scores
    assert math.log(1024) - rows[1024][1] == pytest.approx(0.5, abs=0.02)


def test_efficient_attention_block_table():
    from grader.checks.memory import count_operations, peak_memory
    from solutions.efficient import tiled_attention

    text = answer("efficient_attention", "experiment_blocks")
    g = torch.Generator().manual_seed(0)
    n, d = 1024, 16
    q, k, v = (torch.randn(n, d, generator=g) for _ in range(3))

    def naive():
        return torch.softmax(q @ k.T / math.sqrt(d), dim=-1) @ v

    assert f"and {round(peak_memory(naive) / 1024):,} KiB for `naive_attention`" in text
    peaks = {}
    for block in (16, 64, 256, 1024):
        peaks[block] = peak_memory(lambda b=block: tiled_attention(q, k, v, b, b))
        ops = count_operations(lambda b=block: tiled_attention(q, k, v, b, b))
        row = f"| {block} | {(n // block) ** 2} | {round(peaks[block] / 1024):,} KiB | {ops:,} |"
        assert row in text, row
    assert 7 < peaks[256] / peaks[64] < 9  # "about 8 times the peak"
    assert peaks[1024] > peak_memory(naive)  # one block peaks above the naive version


def test_soft_select_bandwidth_table_and_claims():
    text = answer("soft_select", "experiment_bandwidth")
    flat = " ".join(text.split())  # one line: figures may wrap
    g = torch.Generator().manual_seed(0)
    n = 100
    x = 5 * torch.rand(n, generator=g)
    y = torch.sin(x) + 0.3 * torch.randn(n, generator=g)
    grid = torch.linspace(0, 5, 1001)
    bandwidths = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
    keys, train, loo, true = {}, {}, {}, {}
    for h in bandwidths:
        pred, w = solutions.nadaraya_watson(grid, x, y, h)
        keys[h] = (1 / (w**2).sum(-1)).mean().item()
        train[h] = ((solutions.nadaraya_watson(x, x, y, h)[0] - y) ** 2).mean().item()
        errors = []
        for i in range(n):  # each y_i from the other 99 points
            rest = torch.arange(n) != i
            p, _ = solutions.nadaraya_watson(x[i:i + 1], x[rest], y[rest], h)
            errors.append((p[0] - y[i]).item() ** 2)
        loo[h] = sum(errors) / n
        true[h] = ((pred - torch.sin(grid)) ** 2).mean().item()
        row = f"| {h:g} | {keys[h]:.1f} | {train[h]:.3f} | {loo[h]:.3f} | {true[h]:.3f} |"
        assert row in text, row
    # the best bandwidth, 0.1 nearly as good, more than six times better than h = 0.01
    assert min(true, key=true.get) == 0.3 and true[0.1] < 1.05 * true[0.3]
    assert f"its error against $\\sin x$, {true[0.3]:.3f}, is more than six times" in flat
    assert 6 < true[0.01] / true[0.3] < 7
    # for h <= 0.1 the error is the noise left after averaging k keys, sigma^2 / k
    for h in (0.01, 0.03, 0.1):
        k = float(f"{keys[h]:.1f}")
        assert f"$0.09/{k:.1f} \\approx {0.09 / k:.3f}$" in flat, h
        assert abs(0.09 / k - true[h]) < 0.003, h
    assert f"against {true[0.01]:.3f}, {true[0.03]:.3f} and {true[0.1]:.3f})" in flat
    assert all(keys[a] < keys[b] for a, b in pairwise(bandwidths))  # the noise shrinks
    assert round(true[1.0] / true[0.3]) == 8 and "is about 8 times that at 0.3" in flat
    assert round(keys[3.0]) == 95 and "about 95 of the 100 keys" in flat
    assert f"on $[0, 5]$, {torch.sin(grid).var(unbiased=False).item():.2f}." in flat
    assert true[0.3] < true[1.0] < true[3.0] < torch.sin(grid).var(unbiased=False).item()
    # the training error only falls as h shrinks; leave-one-out finds the true error's minimum
    assert all(train[a] < train[b] for a, b in pairwise(bandwidths))
    assert all(0.06 < loo[h] - true[h] < 0.10 for h in bandwidths)
    assert "adds between 0.06 and 0.10 at every $h$" in flat
    assert min(loo, key=loo.get) == 0.3 and "It is lowest at $h = 0.3$" in flat


def test_by_hand_scale_table_and_claims():
    from solutions import by_hand

    nb = nbformat.read(REPO / "assignments" / "by_hand" / "by_hand.ipynb", as_version=4)
    given = next(c.source for c in nb.cells
                 if c.metadata.get("nbgrader", {}).get("grade_id") == "given")
    names: dict = {}  # X and the weights, as the notebook gives them (no imports, no settings)
    exec("\n".join(line for line in given.splitlines()
                   if not line.startswith(("import", "from", "torch."))), names)
    X, W_Q, W_K, W_V = (torch.tensor(names[m], dtype=torch.float64)
                        for m in ("X", "W_Q", "W_K", "W_V"))
    text = answer("by_hand", "experiment_scale")
    flat = " ".join(text.split())
    scores = by_hand.paper_attention(X, W_Q, W_K, W_V)["scores"]
    largest, entropy = {}, {}
    for c in (0.5, 1, 2, 3):
        q, k, v = (by_hand.project(w, c * X) for w in (W_Q, W_K, W_V))
        assert torch.allclose(by_hand.paper_scores(q, k), c**2 * scores)  # the c^2 of the answer
        assert torch.allclose(v, c * by_hand.project(W_V, X))
        a = torch.softmax(c**2 * scores / math.sqrt(3), dim=0)
        assert torch.equal(a.argmax(0), torch.softmax(scores, dim=0).argmax(0))  # best key kept
        largest[c] = a.max(0).values
        entropy[c] = -(a * a.log()).sum(0)
        row = (f"| {c:g} | {', '.join(f'{w:.2f}' for w in largest[c].tolist())} | "
               f"{', '.join(f'{h:.2f}' for h in entropy[c].tolist())} |")
        assert row in text, row
    assert (entropy[0.5] > 1.3).all() and (entropy[0.5] < math.log(4)).all()  # near log 4
    assert f"$\\log 4 = {math.log(4):.2f}$" in flat and f"$\\log 2 = {math.log(2):.2f}$" in flat
    # query 2 (column 2): a tie at 4 between keys 1 and 2, so 0.50 / 0.50 and entropy log 2
    assert scores[0, 1] == scores[1, 1] == scores[:, 1].max() == 4
    assert largest[3][1].item() == pytest.approx(0.5, abs=1e-4)
    assert entropy[3][1].item() == pytest.approx(math.log(2), abs=0.005)
    for j in (0, 2, 3):  # the others end on one key
        assert largest[3][j] > 0.98 and entropy[3][j] < 0.1
    # the best key's weight from the gaps; the smallest lead sharpens slowest
    leads = {}
    for j in (0, 2, 3):
        col = scores[:, j]
        best = col.max()
        gaps = best - col[col < best]
        leads[j] = gaps.min().item()
        for c in (0.5, 1, 2, 3):
            formula = 1 / (1 + torch.exp(-c**2 * gaps / math.sqrt(3)).sum())
            assert largest[c][j].item() == pytest.approx(formula.item())
    assert leads == {0: 3, 2: 2, 3: 1}
    assert largest[2][3] < largest[2][2] < largest[2][0]
    assert ("at $c = 2$, query 4 (leading by 1) is at 0.83, query 3 (by 2) at 0.98 and query 1 "
            "(by 3) at 1.00") in flat


# rnn_attention's and transformer's experiments. The reference modules draw their weights in the
# same order as the notebooks' own classes, so a student running the notebook with the seed the
# answer names gets the same table.

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


@pytest.mark.slow
def test_tiny_gpt_report_key_heads_table():
    """The capstone's model report: held-out losses for 4, 2 and 1 key heads, seeds 0 and 1,
    trained exactly as the notebook's training cell (the reference model is the solution's)."""
    from solutions.tiny_gpt import TinyGPT

    text = " ".join(answer("tiny_gpt", "report").split())
    nb = nbformat.read(REPO / "assignments" / "tiny_gpt" / "tiny_gpt.ipynb", as_version=4)
    data = next(c.source for c in nb.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == "data")
    ns = {"torch": torch}
    exec(data, ns)  # the notebook's own loading code: text, chars, get_batch, ...
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # (as the notebook; also what its numbers were measured with)
    try:
        losses = {}
        for n_kv_head in (4, 2, 1):
            for seed in (0, 1):
                torch.manual_seed(seed)
                model = TinyGPT(len(ns["chars"]), d_model=64, n_head=4, n_kv_head=n_kv_head,
                                d_ff=128, n_layer=2)
                opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
                g = torch.Generator().manual_seed(seed)
                for _ in range(300):
                    x, y = ns["get_batch"](ns["train_data"], 32, g)
                    loss = F.cross_entropy(model(x)[0].flatten(0, 1), y.flatten())
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                model.eval()
                g = torch.Generator().manual_seed(1)  # held_out_loss's fixed windows
                with torch.no_grad():
                    held = [F.cross_entropy(model(x)[0].flatten(0, 1), y.flatten()).item()
                            for x, y in (ns["get_batch"](ns["val_data"], 64, g)
                                         for _ in range(8))]
                losses[n_kv_head, seed] = sum(held) / len(held)
    finally:
        torch.set_num_threads(threads)
    for n_kv_head in (4, 2, 1):
        a, b = losses[n_kv_head, 0], losses[n_kv_head, 1]
        assert f"{n_kv_head}: {a:.2f} and {b:.2f}" in text, (n_kv_head, a, b)
    values = sorted(losses.values())
    assert f"between {values[0]:.2f} and {values[-1]:.2f}" in text
    assert values[-1] - values[0] < 0.06  # "nothing measurable": within the seeds' spread
    assert min(losses, key=losses.get)[0] == 1  # multi-query has the best run
    assert "2 x n_kv_head x 16 numbers: 128, 64 and 32" in text
