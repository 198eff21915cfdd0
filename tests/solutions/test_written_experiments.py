"""The model answers of the assignments' open-ended experiments state figures these
computations give (each with the seed and order of draws the answer names)."""

from __future__ import annotations

import math
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
