"""The model answers of the assignments' open-ended experiments state figures these
computations give (each with the seed and order of draws the answer names).

The answers were measured on one machine, and the same computation on another CPU gives other
last bits (its vector kernels, its thread count: the order of a long sum), and a trained model
other decimals. So each figure is held to its computation with `agrees` (tests/figures.py): the
written figure must be the computed one rounded, give or take the spread measured between
kernels and thread counts by tests/figures_across_cpus.py, which prints these figures on each and
checks that every test here holds on all of them. Each tolerance below states that spread.
"""

from __future__ import annotations

import math
import re
from itertools import pairwise
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import solutions
from tests.figures import agrees, table, unit

# (not grader.course: `make cuda-check` collects tests/solutions where nbgrader is absent)
REPO = Path(__file__).resolve().parents[2]

# Figures of untrained computations in float32: between AVX-512 (1 thread), AVX2 (1 thread) and
# plain-C kernels with oneDNN and MKL held to SSE4 (2 threads), the largest difference was 4.8e-7
# (the entropy at N = 1024, the keys averaged at h = 0.1; tests/figures_across_cpus.py). 1e-4
# allows two hundred times that, and is a tenth of the last digit any answer writes (0.001).
KERNELS = 1e-4


def answer(assignment: str, grade_id: str) -> str:
    nb = nbformat.read(REPO / "assignments" / assignment / f"{assignment}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return cell.source


def stated(pattern: str, text: str) -> str:
    """The figure that `pattern`'s one group matches in `text` (it must be there)."""
    match = re.search(pattern, text)
    assert match, f"the answer no longer says {pattern!r}"
    return match[1]


# self_attention


def spread_figures() -> dict[int, tuple[float, float]]:
    """{N: (mean largest weight, mean entropy)} over 500 queries of N random keys each."""
    g = torch.Generator().manual_seed(0)
    rows = {}
    for n in (4, 16, 64, 256, 1024):
        q = torch.randn(500, 1, 64, generator=g)
        k = torch.randn(500, n, 64, generator=g)
        v = torch.randn(500, n, 8, generator=g)
        _, a = solutions.scaled_dot_product_attention(q, k, v)
        rows[n] = (a.max(-1).values.mean().item(),
                   -(a * a.clamp_min(1e-30).log()).sum(-1).mean().item())
    return rows


def test_self_attention_spread_table_and_gap():
    text = answer("self_attention", "experiment_spread")
    rows = spread_figures()
    written = table(text)
    assert list(written) == [str(n) for n in rows]
    for n, (largest, entropy) in rows.items():
        big, h, log_n = written[str(n)]
        assert agrees(big, largest, KERNELS) and agrees(h, entropy, KERNELS), (n, largest, entropy)
        assert unit(big) == (0.01 if largest >= 0.1 else 0.001), big  # 3 decimals below 0.1
        assert log_n == f"{math.log(n):.2f}"
    # the best key's multiple of the uniform share, as the answer states it
    assert round(4 * rows[4][0]) == 2 and round(1024 * rows[1024][0]) == 16
    assert "2 times the uniform share" in text and "16 times at $N = 1024$" in text
    # the gap log N - H settles near sigma^2 / 2 = 0.5 for unit-variance scores
    assert math.log(1024) - rows[1024][1] == pytest.approx(0.5, abs=0.02)


# efficient_attention: bytes and operations, counted, not summed (the same on every kernel)


def block_figures() -> tuple[int, dict[int, tuple[int, int]]]:
    """The naive version's peak memory, and {block: (peak memory, operations)} of the tiled one
    (bytes)."""
    from grader.checks.memory import count_operations, peak_memory
    from solutions.efficient import tiled_attention

    g = torch.Generator().manual_seed(0)
    n, d = 1024, 16
    q, k, v = (torch.randn(n, d, generator=g) for _ in range(3))

    def naive():
        return torch.softmax(q @ k.T / math.sqrt(d), dim=-1) @ v

    return peak_memory(naive), {
        block: (peak_memory(lambda b=block: tiled_attention(q, k, v, b, b)),
                count_operations(lambda b=block: tiled_attention(q, k, v, b, b)))
        for block in (16, 64, 256, 1024)}


def test_efficient_attention_block_table():
    text = answer("efficient_attention", "experiment_blocks")
    naive, blocks = block_figures()
    n = 1024
    assert f"and {round(naive / 1024):,} KiB for `naive_attention`" in text
    for block, (peak, ops) in blocks.items():
        row = f"| {block} | {(n // block) ** 2} | {round(peak / 1024):,} KiB | {ops:,} |"
        assert row in text, row
    assert 7 < blocks[256][0] / blocks[64][0] < 9  # "about 8 times the peak"
    assert blocks[1024][0] > naive  # one block peaks above the naive version


# soft_select


def bandwidth_figures():
    """{h: keys averaged}, {h: training error}, {h: leave-one-out error}, {h: error against
    sin x}, and the variance of sin x on the grid."""
    g = torch.Generator().manual_seed(0)
    n = 100
    x = 5 * torch.rand(n, generator=g)
    y = torch.sin(x) + 0.3 * torch.randn(n, generator=g)
    grid = torch.linspace(0, 5, 1001)
    keys, train, loo, true = {}, {}, {}, {}
    for h in (0.01, 0.03, 0.1, 0.3, 1.0, 3.0):
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
    return keys, train, loo, true, torch.sin(grid).var(unbiased=False).item()


def test_soft_select_bandwidth_table_and_claims():
    text = answer("soft_select", "experiment_bandwidth")
    flat = " ".join(text.split())  # one line: figures may wrap
    keys, train, loo, true, sin_var = bandwidth_figures()
    bandwidths = list(keys)
    written = table(text)
    assert list(written) == [f"{h:g}" for h in bandwidths]
    for h in bandwidths:
        for figure, value in zip(written[f"{h:g}"], (keys[h], train[h], loo[h], true[h]),
                                 strict=True):
            assert agrees(figure, value, KERNELS), (h, figure, value)
    # the best bandwidth, 0.1 nearly as good, more than six times better than h = 0.01
    assert min(true, key=true.get) == 0.3 and true[0.1] < 1.05 * true[0.3]
    assert agrees(stated(r"its error against \$\\sin x\$, (\S+), is more than six times", flat),
                  true[0.3], KERNELS)
    assert 6 < true[0.01] / true[0.3] < 7
    # for h <= 0.1 the error is the noise left after averaging k keys, sigma^2 / k: the answer's
    # arithmetic on its own k, and its k and errors against the computation
    for h in (0.01, 0.03, 0.1):
        k = written[f"{h:g}"][0]
        assert f"$0.09/{k} \\approx {0.09 / float(k):.3f}$" in flat, h
        assert abs(0.09 / float(k) - true[h]) < 0.003, h
    quoted = re.search(r"against (\S+), (\S+) and (\S+)\)", flat)
    assert quoted and all(agrees(quoted[i + 1], true[h], KERNELS)
                          for i, h in enumerate((0.01, 0.03, 0.1))), quoted
    assert all(keys[a] < keys[b] for a, b in pairwise(bandwidths))  # the noise shrinks
    assert round(true[1.0] / true[0.3]) == 8 and "is about 8 times that at 0.3" in flat
    assert round(keys[3.0]) == 95 and "about 95 of the 100 keys" in flat
    assert agrees(stated(r"on \$\[0, 5\]\$, (\d\.\d+)\.", flat), sin_var, KERNELS)
    assert true[0.3] < true[1.0] < true[3.0] < sin_var
    # the training error only falls as h shrinks; leave-one-out finds the true error's minimum
    assert all(train[a] < train[b] for a, b in pairwise(bandwidths))
    assert all(0.06 < loo[h] - true[h] < 0.10 for h in bandwidths)
    assert "adds between 0.06 and 0.10 at every $h$" in flat
    assert min(loo, key=loo.get) == 0.3 and "It is lowest at $h = 0.3$" in flat


# by_hand (float64, four numbers a column: no kernel moves these, but held the same way)


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
    written = table(text)
    assert list(written) == ["0.5", "1", "2", "3"]
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
        for figures, values in zip(written[f"{c:g}"], (largest[c], entropy[c]), strict=True):
            figures = figures.split(", ")
            assert len(figures) == 4 and all(
                agrees(f, x, KERNELS) for f, x in zip(figures, values.tolist(), strict=True)), (
                c, figures, values)
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
    said = re.search(r"at \$c = 2\$, query 4 \(leading by 1\) is at (\S+), query 3 \(by 2\) at "
                     r"(\S+) and query 1 \(by 3\) at (\d\.\d\d)", flat)
    assert said and all(agrees(said[i + 1], largest[2][j].item(), KERNELS)
                        for i, j in enumerate((3, 2, 0))), said


# rnn_attention's and transformer's experiments. The reference modules draw their weights in the
# same order as the notebooks' own classes, so a student running the notebook with the seed the
# answer names gets the same table.

# The gradients come through 32 steps of a GRU, and the ones without attention fall by seven
# orders of magnitude on the way: between the same kernels and threads they moved by up to 1.1e-7
# of themselves (tests/figures_across_cpus.py); 1e-4 relative allows a thousand times that, and
# is a thousandth of the smallest step the answer's two digits tell apart (0.1 in 1.0e-2).
GRADIENTS = 1e-4


def power_of_ten(x: float, digits: int) -> str:
    """x as the answer writes it in words: $3 \\times 10^{-7}$ (digits after the point)."""
    mantissa, exponent = f"{x:.{digits}e}".split("e")
    return f"${mantissa} \\times 10^{{{int(exponent)}}}$"


def in_words(pattern: str, text: str) -> str:
    """A figure the answer writes as $m \\times 10^{e}$, where `pattern` has {} for it,
    as Python writes it: '3e-07'."""
    match = re.search(pattern.format(r"\$([\d.]+) \\times 10\^\{(-?\d+)\}\$"), text)
    assert match, f"the answer no longer says {pattern!r}"
    return f"{match[1]}e{match[2]}"


def near(shown: str, value: float, relative: float) -> bool:
    """`agrees`, with a spread relative to the value."""
    return agrees(shown, value, relative * abs(value))


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
    flat = " ".join(text.split())
    grads, att, z = translator_gradients(0)
    with_att, last = grads["attention"], grads["last state only"]
    written = table(text)
    assert list(written) == [str(i) for i in (31, 30, 29, 27, 23, 15, 0)]
    for i in (31, 30, 29, 27, 23, 15, 0):
        steps, a, b = written[str(i)]
        assert steps == str(31 - i)
        assert near(a, with_att[i].item(), GRADIENTS) and near(b, last[i].item(), GRADIENTS), (
            i, a, b, with_att[i].item(), last[i].item())
        assert unit(a) == 10.0 ** (int(a.split("e")[1]) - 1)  # two digits: .1e
    # without attention: an almost constant factor per position, about 0.62
    fall = (last[0] / last[31]).item()
    assert near(stated(r"about (\S+), for each", flat), fall ** (1 / 31), GRADIENTS)
    steps = last[:-1] / last[1:]  # each position's gradient over the next one's
    assert ((steps[:-4] > 0.55) & (steps[:-4] < 0.7)).all()  # constant once past the last few
    assert near(in_words("about {} of the last word's gradient", flat), fall, GRADIENTS)
    # with attention: level from eight positions back (positions 0..23), whatever the position
    level = with_att[:24]
    between = re.search(r"between \$([\d.]+) \\times 10\^\{(-?\d+)\}\$ and "
                        r"\$([\d.]+) \\times 10\^\{(-?\d+)\}\$", flat)
    assert between, "the answer no longer gives the level's range"
    assert near(f"{between[1]}e{between[2]}", level.min().item(), GRADIENTS)
    assert near(f"{between[3]}e{between[4]}", level.max().item(), GRADIENTS)
    first = (with_att[0] / last[0]).item()
    assert agrees(stated(r"about ([\d,]+) times more", flat), first, GRADIENTS * first,
                  place=1e4)  # rounded to ten thousands
    assert (with_att[27:] < last[27:]).all()  # the last few words get less with attention
    # the explanation's figures: the update gate, the untrained weights, the level's 1/S
    assert agrees(stated(r"averages (\d\.\d+)", flat), z.mean().item(), KERNELS)
    assert agrees(stated(r"lies between (\d\.\d+) and", flat), att.min().item(), KERNELS)
    assert agrees(stated(r"lies between \d\.\d+ and (\d\.\d+),", flat), att.max().item(), KERNELS)
    assert (att - 1 / 32).abs().max() < 0.01
    grads64, _, _ = translator_gradients(0, S=64)
    drop = (level.mean() / grads64["attention"][:56].mean()).item()
    assert near(stated(r"drops by a factor of (\d\.\d+)", flat), drop, GRADIENTS)
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
    flat = " ".join(text.split())
    fig = residual_stream(0)
    written = table(text)
    assert list(written) == [str(L) for L in DEPTHS]
    for L in DEPTHS:
        values = (*fig[True, L], *fig[False, L])
        assert all(agrees(f, x, KERNELS) for f, x in zip(written[str(L)], values, strict=True)), (
            L, written[str(L)], values)
        assert written[str(L)][2] == "1.00"  # "an RMS of 1.00 by construction"
    # pre-norm: the squared RMS grows by 0.07 to 0.11 per block on average
    growth = [(fig[True, L][0] ** 2 - 1) / L for L in DEPTHS]
    assert agrees(stated(r"by (\d\.\d+) to \d\.\d+ per block", flat), min(growth), KERNELS)
    assert agrees(stated(r"by \d\.\d+ to (\d\.\d+) per block", flat), max(growth), KERNELS)
    # ... and the cosine is the reciprocal of the RMS, within 1%
    assert "within 1% of 1" in text
    assert all(abs(fig[True, L][0] * fig[True, L][1] - 1) < 0.01 for L in DEPTHS)
    # post-norm: the first block's addition, and the compounding loss
    rms1 = fig[True, 1][0]
    assert agrees(stated(r"about (\d+)% to the squared norm", flat), 100 * (rms1 ** 2 - 1),
                  100 * KERNELS)
    assert agrees(stated(r"after one block is (\d\.\d+)\)", flat), rms1 ** 2, KERNELS)
    assert agrees(stated(r"leaves the input a cosine of (\d\.\d+)", flat), fig[False, 1][1],
                  KERNELS)
    factors = [fig[False, L][1] ** (1 / L) for L in DEPTHS]
    assert agrees(stated(r"a factor between (\d\.\d+) and", flat), min(factors), KERNELS)
    assert agrees(stated(r"a factor between \d\.\d+ and (\d\.\d+) per block", flat),
                  max(factors), KERNELS)
    said = re.search(r"to (\S+) after 8 blocks, (\S+) after 32 and (\S+) after 64", flat)
    assert said and all(agrees(said[i + 1], fig[False, L][1], KERNELS)
                        for i, L in enumerate((8, 32, 64))), said
    assert fig[False, 64][1] < 0.05 < 0.3 < fig[True, 64][1]  # the contrast the answer draws
    # the mark scheme: another seed is within about 0.1 of the table
    for seed in (1, 2):
        other = residual_stream(seed)
        assert all(abs(a - b) < 0.1 for L in DEPTHS for form in (True, False)
                   for a, b in zip(other[form, L], fig[form, L], strict=True))


# tiny_gpt: six small models trained for 300 steps, so the CPU moves their losses in the second
# decimal. With 4 key heads, seeds 0 and 1: AVX-512 1.9251 and 1.9254 (the answer's 1.93 and
# 1.93), AVX2 1.9148 and 1.9385 (what another 2-core machine measured: 1.91 and 1.94), plain C
# with SSE4 1.9221 and 1.9437; over the six runs a loss moved by up to 0.018 between kernels
# (tests/figures_across_cpus.py), while two seeds of one setting differ by up to 0.040 (1 key
# head, SSE4). TRAINED is that seeds' spread: another CPU may move a loss as far as another seed
# does, no further. A model that trained less fails: 300 steps take the loss from about 4.6 nats
# to 1.9, and the notebook's own bar is 2.2.
TRAINED = 0.04


def key_heads_losses() -> dict[tuple[int, int], float]:
    """{(n_kv_head, seed): held-out loss} for 4, 2 and 1 key heads, seeds 0 and 1, trained
    exactly as the capstone's training cell (the reference model is the solution's), on one
    thread as the notebook."""
    from solutions.tiny_gpt import TinyGPT

    nb = nbformat.read(REPO / "assignments" / "tiny_gpt" / "tiny_gpt.ipynb", as_version=4)
    data = next(c.source for c in nb.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == "data")
    ns = {"torch": torch}
    exec(data, ns)  # the notebook's own loading code: text, chars, get_batch, ...
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # (as the notebook)
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
    return losses


@pytest.mark.slow
def test_tiny_gpt_report_key_heads_table():
    """The capstone's model report: held-out losses for 4, 2 and 1 key heads, seeds 0 and 1."""
    report_holds(key_heads_losses())


def report_holds(losses: dict[tuple[int, int], float]) -> None:
    """The report's figures and conclusion, held against the six losses (also called by
    tests/figures_across_cpus.py with each CPU setting's losses)."""
    text = " ".join(answer("tiny_gpt", "report").split())
    for n_kv_head in (4, 2, 1):
        a, b = losses[n_kv_head, 0], losses[n_kv_head, 1]
        said = re.search(rf"{n_kv_head}: (\d\.\d\d) and (\d\.\d\d)", text)
        assert said, f"the report gives no losses for {n_kv_head} key heads"
        assert agrees(said[1], a, TRAINED) and agrees(said[2], b, TRAINED), (n_kv_head, a, b)
    values = sorted(losses.values())
    assert agrees(stated(r"lie between (\d\.\d\d) and", text), values[0], TRAINED)
    assert agrees(stated(r"lie between \d\.\d\d and (\d\.\d\d)", text), values[-1], TRAINED)
    # the conclusion, "nothing measurable": the six runs lie closer together than the tolerance
    # a figure is allowed, and the settings' means no further apart than one setting's two seeds
    # (which setting has the single best run is not stated: on this machine's AVX2 kernels it
    # held by 0.002, less than a trained loss moves between CPUs)
    assert values[-1] - values[0] < 0.06
    means = [(losses[n, 0] + losses[n, 1]) / 2 for n in (4, 2, 1)]
    seeds = [abs(losses[n, 0] - losses[n, 1]) for n in (4, 2, 1)]
    assert max(means) - min(means) <= max(seeds) + TRAINED
    assert "2 x n_kv_head x 16 numbers: 128, 64 and 32" in text
