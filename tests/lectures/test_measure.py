"""The measuring helpers of the lectures give the numbers they claim to give."""

import time

import matplotlib.pyplot as plt
import pytest
import torch

from lectures.toolkit.measure import (
    count_operations,
    format_bytes,
    largest_intermediate,
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


def test_min_times_takes_each_calls_fastest_turn_and_interleaves_them():
    order = []
    clock_ticks = iter(range(1000))

    def clock():  # a fake clock: each reading is one tick later, so every call lasts 1 tick
        return float(next(clock_ticks))

    def call(key, extra):
        def fn():
            order.append(key)
            for _ in range(extra.pop(0) if extra else 0):
                clock()  # a slow turn: the clock is read more, i.e. time passes
        return fn

    best = min_times({"a": call("a", [0, 5, 2, 5]), "b": call("b", [0, 7, 0, 0])}, repeats=3,
                     warmup=1, clock=clock)
    assert order == ["a", "b"] * 4  # warm-up, then turns: a, b, a, b, ...
    assert best == {"a": 3.0, "b": 1.0}  # a: turns of 6, 3 and 6 ticks; b: 8, 1, 1


def test_min_times_on_the_cpu_clock_ignores_sleeping():
    best = min_times({"sleep": lambda: time.sleep(0.02)}, repeats=2)
    assert best["sleep"] < 0.01  # waiting is not work: CPU time stays near zero


def test_min_times_rejects_no_repeats():
    with pytest.raises(ValueError):
        min_times({"x": lambda: None}, repeats=0)


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
