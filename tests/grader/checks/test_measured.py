"""grader.checks.measured on its own: the poisoned-input checks tell skipping from masking and a
step that reads its caches from one that does not; the memory check measures only inside the
grader. (Through the sandbox, with attacks: tests/adversarial/test_measured_points.py.)"""

import math

import pytest
import torch

from grader.checks import CheckFailure
from grader.checks.measured import (
    expect_hidden_tiles_skipped,
    expect_memory_measured_linear,
    expect_step_reads_cache,
)
from solutions import efficient


def masking_tiled(q, k, v, block_q=16, block_k=16, is_causal=False):
    """Every tile computed, the hidden ones masked: right outputs, no tile skipped."""
    scale = 1 / math.sqrt(q.size(-1))
    out = torch.empty(q.size(0), v.size(-1))
    for i0 in range(0, q.size(0), block_q):
        qi = q[i0:i0 + block_q]
        m = torch.full((qi.size(0), 1), -math.inf)
        l, o = torch.zeros_like(m), torch.zeros(qi.size(0), v.size(-1))
        for j0 in range(0, k.size(0), block_k):
            s = qi @ k[j0:j0 + block_k].T * scale
            if is_causal:
                rows = torch.arange(i0, i0 + qi.size(0))[:, None]
                s = s.masked_fill(torch.arange(j0, j0 + s.size(1))[None, :] > rows, -math.inf)
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            p, c = torch.exp(s - m_new), torch.exp(m - m_new)
            l, o, m = l * c + p.sum(-1, keepdim=True), o * c + p @ v[j0:j0 + block_k], m_new
        out[i0:i0 + qi.size(0)] = o / l
    return out


def test_the_reference_skips_hidden_tiles():
    expect_hidden_tiles_skipped(efficient.tiled_attention, "tiled_attention")


def test_computing_hidden_tiles_and_masking_them_is_caught():
    with pytest.raises(CheckFailure, match="computed tiles that the causal mask hides"):
        expect_hidden_tiles_skipped(masking_tiled, "tiled_attention")


def test_wrong_rows_before_the_poison_are_caught():
    def off(q, k, v, *blocks):
        return efficient.tiled_attention(q, k, v, *blocks) * 1.5

    with pytest.raises(CheckFailure, match="rows 0"):
        expect_hidden_tiles_skipped(off, "tiled_attention")


class Cache:
    def __init__(self):
        self.k = self.v = None

    def append(self, k, v):
        self.k, self.v = k, v
        return k, v


def reference_step(token, t, past):  # a stand-in model: the logits follow the past
    return torch.stack([k.sum() + 2 * v.sum() for k, v in past]).expand(token.size(0), -1) + t


def test_a_step_that_reads_its_caches_passes_and_one_that_does_not_fails():
    def reads(token, t, caches):
        return reference_step(token, t, [(c.k, c.v) for c in caches])

    def recomputes(token, t, caches):  # from the tokens it has seen: none here
        return reference_step(token, t, [(torch.zeros(1), torch.zeros(1)) for _ in caches])

    args = (Cache, reference_step, 2, (3, 2, 4, 5), torch.zeros(3, 1), 4, "step")
    expect_step_reads_cache(reads, *args)
    with pytest.raises(CheckFailure, match="placed in its caches"):
        expect_step_reads_cache(recomputes, *args)


def test_memory_is_measured_only_by_the_grader(capsys):
    assert expect_memory_measured_linear("tiled_attention", "tiled_attention") is None
    assert "measured when the grader runs this test" in capsys.readouterr().out


def test_skipping_too_much_is_a_wrong_value_not_a_computed_hidden_tile():
    def no_diagonal(q, k, v, block_q=16, block_k=16, is_causal=False):  # the diagonal skipped
        out = torch.full((q.size(0), v.size(-1)), math.nan)  # the first block: 0 / 0
        for i0 in range(block_q, q.size(0), block_q):
            out[i0:i0 + block_q] = efficient.tiled_attention(
                q[i0:i0 + block_q], k[:i0], v[:i0], block_q, block_k)
        return out

    with pytest.raises(CheckFailure) as failure:
        expect_hidden_tiles_skipped(no_diagonal, "tiled_attention")
    assert "hides entirely" not in str(failure.value)
