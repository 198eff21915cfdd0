"""The class bench's arithmetic (bench/autograde_class.py): which sizes of class it grades, and
the line through them that gives CPU per notebook and the start-up. Its timings are not tested
here: they are measured by running it."""

from pathlib import Path

import pytest

from tests.support.scripts import script_module

BENCH = Path(__file__).resolve().parents[2] / "bench" / "autograde_class.py"


@pytest.fixture(scope="module")
def bench():
    return script_module(BENCH)


def test_two_cores_grade_the_class_a_third_of_it_and_one_submission_a_worker(bench):
    assert bench.class_sizes(30, 2) == (30, 10, 2)


def test_no_size_is_smaller_than_the_workers_a_run_starts(bench):
    """Below one submission a worker, a run starts fewer workers: less start-up, off the line."""
    assert bench.class_sizes(30, 16) == (30, 16)
    assert min(bench.class_sizes(100, 8)) == 8


def test_one_core_still_grades_two_sizes(bench):
    assert bench.class_sizes(30, 1) == (30, 10, 2)


def test_a_class_too_small_for_a_line_is_refused_by_name(bench):
    with pytest.raises(SystemExit, match="a class of 2 on 2 cores gives one size"):
        bench.class_sizes(2, 2)


def test_the_line_through_exact_points_gives_their_slope_and_start_up(bench):
    slope, start = bench.line([(30, 4.5 + 30 * 0.2), (10, 4.5 + 10 * 0.2), (2, 4.5 + 2 * 0.2)])
    assert slope == pytest.approx(0.2)
    assert start == pytest.approx(4.5)


def test_the_line_is_least_squares_not_the_two_ends(bench):
    """A middle size above the line of the two ends pulls the start-up up and the slope down."""
    ends = bench.line([(2, 5.0), (30, 12.0)])
    slope, start = bench.line([(2, 5.0), (10, 8.0), (30, 12.0)])
    assert ends == pytest.approx((0.25, 4.5))
    # by hand: mean size 14, mean CPU 25/3; Sxy = 12*10/3 + 4*1/3 + 16*11/3 = 100, Sxx = 416
    assert slope == pytest.approx(100 / 416)
    assert start == pytest.approx(25 / 3 - 14 * 100 / 416)


def test_every_size_runs_in_every_place_of_a_slot_as_often(bench):
    sizes = (30, 10, 2)
    orders = [bench.slot_order(sizes, r) for r in range(6)]
    assert len(set(orders)) == 6
    for k in sizes:
        assert sorted(order.index(k) for order in orders) == [0, 0, 1, 1, 2, 2]
    assert bench.slot_order(sizes, 6) == orders[0]


def test_two_sizes_take_turns_at_going_first(bench):
    assert [bench.slot_order((30, 10), r)[0] for r in range(4)] == [30, 10, 30, 10]


def test_the_least_possible_cost_adds_each_part_once(bench):
    costs = {bench.STAGES[0]: 0.010, bench.STAGES[2]: 0.030, bench.BARE: 0.010,
             bench.CALLS: 100, bench.OTHERS: 40, bench.CALL_PRICE: 200e-6,
             bench.OTHER_PRICE: 25e-6}
    text = bench.least_possible(costs, work=0.100, remembered=0.070)
    # 0.070 + 0.010 + 0.030 + 0.010 + (100 x 200 us + 40 x 25 us = 0.021) = 0.141
    assert "0.141 s" in text and "= 1.41 x the test work" in text
    assert "100 calls crossing at 200 us and 40 other requests at 25 us" in text


def test_the_requests_a_block_sends_are_counted_by_operation(bench, monkeypatch):
    import collections

    from grader.sandbox import session

    class Quiet(session.Session):
        def __init__(self):  # no process: the request below answers by itself
            pass

    def answer(self, message, timeout=None):
        return {"ok": True}

    monkeypatch.setattr(session.Session, "request", answer)
    sent = collections.Counter()
    with bench.counting(sent):
        for op in ("call", "call", "run", "get_many"):
            assert Quiet().request({"op": op}) == {"ok": True}
    assert session.Session.request is answer  # put back as the block found it
    assert sent == {"call": 2, "run": 1, "get_many": 1}
