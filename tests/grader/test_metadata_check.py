"""Our CheckCellMetadata (grader/preprocessors.py) is nbgrader's, with the schema's validator built
once: it must accept and refuse exactly the notebooks nbgrader's own step does."""

from __future__ import annotations

import copy

import nbformat
import pytest
from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheck

from grader.course import REPO
from grader.preprocessors import CheckCellMetadata as OurCheck

SOURCE = REPO / "assignments" / "self_attention" / "self_attention.ipynb"


def _graded(nb):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))


def _corrupt(change):
    nb = nbformat.read(SOURCE, as_version=4)
    change(nb)
    return nb


CASES = {
    "untouched": lambda nb: None,
    "points not a number": lambda nb: _graded(nb).metadata.nbgrader.update(points="many"),
    "grade not a boolean": lambda nb: _graded(nb).metadata.nbgrader.update(grade="yes"),
    "no grade id": lambda nb: _graded(nb).metadata.nbgrader.pop("grade_id"),
    "empty grade id": lambda nb: _graded(nb).metadata.nbgrader.update(grade_id=""),
    "no points": lambda nb: _graded(nb).metadata.nbgrader.pop("points"),
    "schema too old": lambda nb: _graded(nb).metadata.nbgrader.update(schema_version=1),
    "schema too new": lambda nb: _graded(nb).metadata.nbgrader.update(schema_version=9),
    "markdown grade, not solution": lambda nb: nb.cells.append(nbformat.v4.new_markdown_cell(
        "x", metadata={"nbgrader": {"grade": True, "solution": False, "locked": False,
                                    "points": 1, "grade_id": "md", "schema_version": 3}})),
    "duplicate grade id": lambda nb: nb.cells.append(copy.deepcopy(_graded(nb))),
    "task cell in code": lambda nb: nb.cells.append(nbformat.v4.new_code_cell(
        "x", metadata={"nbgrader": {"grade": False, "solution": False, "locked": True,
                                    "task": True, "points": 1, "grade_id": "t",
                                    "schema_version": 3}})),
}


def _verdict(step, nb):
    try:
        step().preprocess(nb, {})
        return "accepted"
    except Exception as e:
        return type(e).__name__


@pytest.mark.parametrize("case", CASES)
def test_same_verdict_as_nbgraders_own_step(case):
    ours = _verdict(OurCheck, _corrupt(CASES[case]))
    theirs = _verdict(NbgraderCheck, _corrupt(CASES[case]))
    assert ours == theirs
    assert (ours == "accepted") == (case == "untouched")  # every corruption is refused
