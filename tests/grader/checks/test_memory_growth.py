"""The growth checks of grader/checks/memory.py read a growth from every size measured."""

from __future__ import annotations

import numpy as np
import pytest

from grader.checks import CheckFailure
from grader.checks.memory import expect_linear_memory, growth_exponent

SIZES = [64, 128, 256, 512]


@pytest.mark.parametrize("p", [0.5, 1.0, 2.0, 3.0])
def test_an_exact_power_law_gives_its_exponent(p):
    assert growth_exponent(SIZES, [7.0 * n**p for n in SIZES]) == pytest.approx(p, abs=1e-12)


def test_every_size_counts_not_only_the_two_ends():
    # the same ends, a different middle: a line through the ends cannot tell these apart
    straight = [n * 100.0 for n in SIZES]
    bent = [SIZES[0] * 100.0, SIZES[1] * 400.0, SIZES[2] * 100.0, SIZES[3] * 100.0]
    assert growth_exponent(SIZES, straight) == pytest.approx(1.0)
    assert growth_exponent(SIZES, bent) != pytest.approx(1.0, abs=0.05)
    # the least-squares slope on log-log axes, as numpy's own fit gives it
    slope = np.polyfit(np.log(SIZES), np.log(bent), 1)[0]
    assert growth_exponent(SIZES, bent) == pytest.approx(slope)
    # in units of log 2 the sizes sit at -1.5, -0.5, 0.5, 1.5 about their mean (squares sum to 5)
    # and the bump adds 2 at -0.5: the slope moves by -0.5 * 2 / 5
    assert slope == pytest.approx(1 - 0.2)


def test_two_sizes_give_the_line_through_them():
    assert growth_exponent([100, 400], [3.0, 48.0]) == pytest.approx(2.0)


@pytest.mark.parametrize("sizes, values", [([64], [1.0]), ([64, 128], [1.0]),
                                           ([0, 128], [1.0, 2.0]), ([64, 128], [1.0, -2.0]),
                                           ([64, 64], [1.0, 2.0])])
def test_too_little_or_no_growth_to_fit_is_refused(sizes, values):
    with pytest.raises(ValueError):
        growth_exponent(sizes, values)


def test_a_tile_and_a_linear_part_pass():
    tile = 32 * 32 * 4
    peaks = [tile + 16 * 8 * 3 * n for n in SIZES]  # float64 copies of q, k, v: still linear
    assert expect_linear_memory(SIZES, peaks, "tiled") <= 1.0


def test_a_score_matrix_fails_and_the_message_says_what_grows_and_how_fast():
    peaks = [32 * 32 * 4 + 4 * n * n for n in SIZES]
    with pytest.raises(CheckFailure) as failed:
        expect_linear_memory(SIZES, peaks, "tiled_attention (blocks of 32)")
    message = str(failed.value)
    p = growth_exponent(SIZES, peaks)
    assert f"n^{p:.2f}" in message and "fitted over all 4 lengths" in message
    assert "n = 512: 1028.0 KiB" in message  # each size's peak, as measured
