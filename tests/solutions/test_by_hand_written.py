"""The by-hand assignment's model answer to its written question states figures that these
computations give: the exact and the paper weights of query 2, each simplification alone, and
how the order changes which one moves the weights most."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import nbformat
import pytest

# (not grader.course: `make cuda-check` collects tests/solutions where nbgrader is absent)
REPO = Path(__file__).resolve().parents[2]

SCORES = (4, 4, 2, 1)  # query 2's scores in the worked example
NAMES = ("divisor", "floor", "base")


def weights(divisor: bool, floor: bool, base: bool) -> list[float]:
    x = [s / (2 if divisor else math.sqrt(3)) for s in SCORES]
    if floor:
        x = [math.floor(v) for v in x]
    e = [(3 if base else math.e) ** v for v in x]
    return [v / sum(e) for v in e]


def moved(a, b) -> float:
    return sum(abs(x - y) for x, y in zip(a, b, strict=True))


def shown(ws) -> str:
    return "(" + ", ".join(f"{w:.2f}" for w in ws) + ")"


@pytest.fixture(scope="module")
def answer() -> str:
    nb = nbformat.read(REPO / "assignments" / "by_hand" / "by_hand.ipynb", as_version=4)
    cell = next(c for c in nb.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == "written_simplifications")
    return " ".join(cell.source.split())  # one line: figures may wrap


def test_the_exact_and_the_paper_weights(answer):
    exact, paper = weights(False, False, False), weights(True, True, True)
    assert f"softmax gives about ${shown(exact)}$" in answer
    assert paper == pytest.approx([9 / 22, 9 / 22, 3 / 22, 1 / 22])
    assert f"\\approx {shown(paper)}$" in answer


def test_each_simplification_alone(answer):
    exact = weights(False, False, False)
    alone = {name: weights(*(i == k for k in range(3))) for i, name in enumerate(NAMES)}
    for name, ws in alone.items():
        assert shown(ws) in answer, name
    total = {name: moved(exact, ws) for name, ws in alone.items()}
    largest = {name: max(abs(x - y) for x, y in zip(exact, ws, strict=True))
               for name, ws in alone.items()}
    assert max(total, key=total.get) == "divisor"  # by the sum of the changes
    assert max(largest, key=largest.get) == "floor"  # by the largest change of one weight
    assert f"0.{round(largest['floor'] * 1000):03d} on key 3" in answer


def test_the_order_decides_which_moves_most(answer):
    exact = weights(False, False, False)
    most = set()
    for order in itertools.permutations(range(3)):
        state, before, steps = [False] * 3, exact, {}
        for i in order:
            state[i] = True
            after = weights(*state)
            steps[NAMES[i]] = moved(before, after)
            before = after
        most.add(max(steps, key=steps.get))
        if order[0] == 1:  # the floor first: the divisor then changes nothing
            assert steps["divisor"] == pytest.approx(0, abs=1e-12)
        if order == (0, 1, 2):
            figures = ", ".join(f"{steps[n]:.3f}" for n in ("floor", "divisor", "base"))
            assert figures == "0.064, 0.061, 0.038"
            assert "(a sum of 0.064, against 0.061 and 0.038)" in answer
    assert len(most) > 1  # no single right answer: the mark scheme says so
    assert "depends on the order" in answer and "no single right" in answer
