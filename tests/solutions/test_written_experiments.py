"""The model answers of the assignments' open-ended experiments state figures these
computations give (each with the seed and order of draws the answer names)."""

from __future__ import annotations

import math
from itertools import pairwise
from pathlib import Path

import nbformat
import pytest
import torch

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
