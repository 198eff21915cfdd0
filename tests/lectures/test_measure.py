"""The measuring helpers of the lectures give the numbers they claim to give."""

import time

import matplotlib.pyplot as plt
import pytest
import torch

from lectures.toolkit.measure import (
    count_operations,
    format_bytes,
    largest_intermediate,
    median_exponent,
    median_time,
    min_times,
    peak_memory,
    plot_scaling,
    power_law_exponent,
)


def test_median_time_ignores_one_slow_call_and_the_warmup():
    delays = iter([0.05, 0.002, 0.002, 0.03, 0.002])  # warm-up, then 4 calls, one slow

    def fn():
        time.sleep(next(delays))

    t = median_time(fn, repeats=4, warmup=1)
    assert 0.0019 < t < 0.02  # the median of (2, 2, 30, 2) ms is 2 ms; the mean would be ~9


def test_median_time_rejects_no_repeats():
    with pytest.raises(ValueError):
        median_time(lambda: None, repeats=0)


def fake_clock_calls(durations):
    """A fake clock and calls whose turns last the given ticks: durations = {key: [ticks, ...]}.

    Each clock reading is one tick later, so a call that reads it n - 1 more times lasts n ticks;
    once its list is used up every turn lasts 1 tick. Returns (clock, calls, order of calls).
    """
    order = []
    clock_ticks = iter(range(100_000))

    def clock():
        return float(next(clock_ticks))

    def call(key, ticks):
        def fn():
            order.append(key)
            for _ in range(ticks.pop(0) - 1 if ticks else 0):
                clock()
        return fn

    return clock, {key: call(key, list(ticks)) for key, ticks in durations.items()}, order


def test_min_times_takes_each_calls_fastest_turn_and_interleaves_them():
    # warm-up, then turns; a's fastest (3) is reached twice, b's (1) too
    clock, calls, order = fake_clock_calls({"a": [1, 6, 3, 3], "b": [1, 8, 1, 1]})
    best = min_times(calls, repeats=3, warmup=1, clock=clock)
    assert order == ["a", "b"] * 4  # warm-up, then turns: a, b, a, b, ...
    assert best == {"a": 3.0, "b": 1.0} and best.turns == 3 and best.unmatched == []


def test_min_times_goes_on_until_every_fastest_turn_is_reached_twice():
    # a's turns: 6, 3, 6 ticks, then 5, 3: its fastest (3) is matched on the fifth turn
    clock, calls, order = fake_clock_calls({"a": [1, 6, 3, 6, 5, 3, 9], "b": [1, 2, 2, 2, 2, 2]})
    best = min_times(calls, repeats=3, warmup=1, clock=clock)
    assert best.turns == 5 and best.unmatched == []
    assert best == {"a": 3.0, "b": 2.0}
    assert order == ["a", "b"] * 6


def test_min_times_counts_a_turn_within_the_agreement_as_a_match():
    clock, calls, _ = fake_clock_calls({"a": [1, 100, 104, 130]})  # 104 is within 5 % of 100
    assert min_times(calls, repeats=2, clock=clock).turns == 2
    clock, calls, _ = fake_clock_calls({"a": [1, 100, 106, 130, 100]})  # 106 is not
    best = min_times(calls, repeats=2, clock=clock)
    assert best.turns == 4 and best == {"a": 100.0}


def test_min_times_drops_a_lone_fast_turn_for_the_fastest_that_two_turns_reach():
    # one turn of 60 ticks among turns of 100-ish: after 8 turns (4 x repeats) the lone 60 is
    # still unmatched, and the time is the fastest level two turns agree on
    clock, calls, _ = fake_clock_calls({"a": [1, 100, 60, 130, 103, 150, 160, 170, 180]})
    best = min_times(calls, repeats=2, clock=clock)
    assert best.turns == 8 and best == {"a": 100.0} and best.unmatched == []


def test_min_times_stops_after_max_repeats_and_lists_what_never_agreed():
    # every turn 10 % slower than the one before: no two turns ever agree
    clock, calls, _ = fake_clock_calls({"a": [1] + [round(100 * 1.1 ** i) for i in range(50)],
                                        "b": [1] + [5] * 50})
    best = min_times(calls, repeats=2, clock=clock)
    assert best.turns == 8 and best.unmatched == ["a"] and best == {"a": 100.0, "b": 5.0}
    clock, calls, _ = fake_clock_calls({"a": [1] + [round(100 * 1.1 ** i) for i in range(50)]})
    assert min_times(calls, repeats=2, max_repeats=3, clock=clock).turns == 3


def test_min_times_on_the_cpu_clock_ignores_sleeping():
    best = min_times({"sleep": lambda: time.sleep(0.02)}, repeats=2)
    assert best["sleep"] < 0.01  # waiting is not work: CPU time stays near zero


def test_min_times_keeps_every_timed_turn():
    clock, calls, _ = fake_clock_calls({"a": [9, 4, 6, 4], "b": [9, 1, 2, 1]})
    best = min_times(calls, repeats=3, warmup=1, clock=clock)
    assert best.samples == {"a": [4.0, 6.0, 4.0], "b": [1.0, 2.0, 1.0]}  # not the warm-up


# Three sizes whose work is 1, 2 and 4 ticks, timed in five turns. The machine runs at half
# speed in turns 1, 4 and 5, and turns slow in the middle of turn 3, before the largest size:
# so the largest size's fast time (4) is reached once, and its floor is the slow 8.
SPELLS = {1024: [1, 2, 1, 1, 2, 2], 2048: [1, 4, 2, 2, 4, 4], 4096: [1, 8, 4, 8, 8, 8]}


def test_a_slow_spell_bends_the_slope_through_the_floors_but_not_the_median_exponent():
    clock, calls, _ = fake_clock_calls(SPELLS)
    best = min_times(calls, repeats=5, max_repeats=5, clock=clock)
    sizes = list(SPELLS)
    assert [best[n] for n in sizes] == [1.0, 2.0, 8.0]
    assert power_law_exponent(sizes, [best[n] for n in sizes]) > 1.4   # the floors mislead
    assert median_exponent(sizes, [best.samples[n] for n in sizes]) == pytest.approx(1.0)


def test_median_exponent_is_the_median_of_the_turns_slopes():
    sizes = [1, 2, 4]
    samples = [[1, 1, 1], [2, 4, 2 ** 0.5], [4, 16, 2]]  # turns of slope 1, 2 and 0.5
    assert median_exponent(sizes, samples) == pytest.approx(1.0)
    samples = [[1, 1, 1], [2, 4, 4], [4, 16, 16]]
    assert median_exponent(sizes, samples) == pytest.approx(2.0)


def test_median_exponent_rejects_ragged_turns():
    with pytest.raises(ValueError, match="one time per turn"):
        median_exponent([1, 2], [[1, 1], [2]])
    with pytest.raises(ValueError, match="one time per turn"):
        median_exponent([1, 2, 4], [[1], [2]])


def test_min_times_rejects_no_repeats_and_a_cap_below_them():
    with pytest.raises(ValueError):
        min_times({"x": lambda: None}, repeats=0)
    with pytest.raises(ValueError, match="max_repeats"):
        min_times({"x": lambda: None}, repeats=5, max_repeats=4)


def test_largest_intermediate_finds_the_score_matrix():
    q = torch.randn(1, 100, 8)
    k = torch.randn(1, 300, 8)

    def attention():
        scores = q @ k.transpose(-2, -1)  # (1, 100, 300) float32: 120000 bytes
        return scores.softmax(-1) @ k  # (1, 100, 8)

    nbytes, shape = largest_intermediate(attention)
    assert (nbytes, shape) == (100 * 300 * 4, (1, 100, 300))


def test_largest_intermediate_where_filters_by_shape():
    q = torch.randn(100, 8)

    def tiles():
        out = torch.empty(100, 8)  # 3200 bytes, 8 wide
        for i in range(0, 100, 25):
            s = q[i:i + 25] @ q[:50].T  # (25, 50) tiles: 5000 bytes
            out[i:i + 25] = s.softmax(-1) @ q[:50]
        return out

    assert largest_intermediate(tiles) == (25 * 50 * 4, (25, 50))
    assert largest_intermediate(tiles, where=lambda s: s[-1] == 8) == (100 * 8 * 4, (100, 8))
    assert largest_intermediate(tiles, where=lambda s: len(s) > 2) == (0, None)


def test_largest_intermediate_does_not_count_views_or_inputs():
    x = torch.randn(1000, 10)

    def only_views():
        x.t().reshape(10, 1000)[:, :5].unsqueeze(0)  # (10, 5) would be a copy: 200 bytes

    def small_copy():
        return x[:2].clone()

    assert largest_intermediate(only_views)[0] == 0
    assert largest_intermediate(small_copy) == (2 * 10 * 4, (2, 10))


def test_count_operations_grows_with_a_python_loop_only():
    x = torch.randn(4, 3)

    def loop(n):
        h = torch.zeros(3)
        for t in range(n):
            h = torch.tanh(h + x[t % 4])  # index, add, tanh: 3 operations per step
        return h

    assert count_operations(lambda: x @ x.T) == count_operations(lambda: (x @ x.T) @ x) - 1
    assert count_operations(lambda: loop(20)) - count_operations(lambda: loop(10)) == 30


def test_peak_memory_counts_what_is_alive_at_once():
    n = 256 * 1024  # elements: 1 MiB in float32

    def two_then_one():
        a = torch.ones(n)
        b = torch.ones(n)  # 2 MiB alive here
        del a, b
        return torch.ones(n // 2)  # 0.5 MiB, returned

    def one_at_a_time():
        for _ in range(3):
            torch.ones(n)  # freed straight away: never more than 1 MiB

    assert 2 * 4 * n <= peak_memory(two_then_one) < 2.1 * 4 * n
    assert 4 * n <= peak_memory(one_at_a_time) < 1.1 * 4 * n


def test_power_law_exponent_recovers_the_exponent():
    sizes = [10, 20, 40, 80]
    assert power_law_exponent(sizes, [3 * n**2 for n in sizes]) == pytest.approx(2.0)
    assert power_law_exponent(sizes, [5 * n for n in sizes]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        power_law_exponent([10], [1])
    with pytest.raises(ValueError):
        power_law_exponent([10, 20], [0, 1])


def test_format_bytes():
    assert format_bytes(512) == "512 B"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(3 * 1024**2) == "3.0 MiB"
    assert format_bytes(5 * 1024**4) == "5120.0 GiB"


def test_plot_scaling_draws_labelled_log_log_axes():
    fig, ax = plt.subplots()
    plot_scaling(ax, [1, 2, 4], {"a": [1, 4, 16], "b": [2, 4, 8]}, title="t", xlabel="n",
                 ylabel="seconds", guides=(2,))
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("t", "n", "seconds")
    lines = ax.get_lines()
    assert len(lines) == 3  # two series and one guide
    guide = lines[-1].get_ydata()
    assert list(guide) == pytest.approx([1, 4, 16])  # anchored at the first point, slope 2
    assert list(ax.get_xticks()) == [1, 2, 4]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4"]
    plt.close(fig)


def test_plot_scaling_guides_differ_in_line_style_not_only_colour():
    fig, ax = plt.subplots()
    plot_scaling(ax, [1, 2, 4], {"a": [1, 2, 4], "b": [1, 1, 1]}, title="t", xlabel="n",
                 ylabel="s", guides=(0, 1, 2))
    series, guides = ax.get_lines()[:2], ax.get_lines()[2:]
    assert len({line.get_linestyle() for line in guides}) == 3
    assert all(line.get_linestyle() == "-" for line in series)  # solid: never mistaken for one
    assert series[0].get_color() != series[1].get_color()
    legend = {t.get_text(): h for t, h in zip(ax.get_legend().get_texts(),
                                              ax.get_legend().legend_handles, strict=True)}
    for line in ax.get_lines():  # the legend shows each line in its own colour and style
        assert legend[line.get_label()].get_color() == line.get_color()
        assert legend[line.get_label()].get_linestyle() == line.get_linestyle()
    plt.close(fig)
