"""`grader check` says that the student's machine lacks something, not that the student misspelt a
name, when a cell the assignment provides fails; and only where that is verified: the cell is
unchanged since its release (nbgrader's checksum) and nothing of the student's ran before it.
The same error from an edited cell, or from a provided cell after an answer, gets no such claim."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from grader.selfcheck.run import report, run_visible_tests
from tests.support.classes import released_class, write_assignment
from tests.support.notebooks import (
    cell_of,
    grade_cell,
    nbgrader_cell,
    nbgrader_notebook,
    solution_cell,
)

DATA = ("from pathlib import Path\n"
        "DATA = Path('/nonexistent/course-data/words.txt')\n"
        "WORDS = DATA.read_text().split()\n")
ANSWER = "def count(words):\n    return len(words)\n"
CLAIM = "this machine lacks something the assignment needs"


def _assignment(data_first: bool):
    data = nbgrader_cell(new_code_cell(DATA), "data")
    answer = solution_cell("### BEGIN SOLUTION\n" + ANSWER + "### END SOLUTION", "count")
    cells = [data, answer] if data_first else [answer, data]
    return nbgrader_notebook(cells + [
        grade_cell("assert count(['a']) == 1", "test_count", points=1),
        grade_cell("assert count(WORDS) > 0", "test_words", points=1),
    ])


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """{"first": the released notebook with its data cell first, "after": after the answer}."""
    out = {}
    for name, first in (("first", True), ("after", False)):
        tmp = tmp_path_factory.mktemp(name)
        write_assignment(tmp / "src", "words", _assignment(first))
        out[name] = released_class(tmp, "words", source=tmp / "src").released
    return out


def _checked(path, tmp_path, edit=None):
    nb = nbformat.read(path, as_version=4)
    cell_of(nb, "count").source = ANSWER
    if edit:
        edit(nb)
    target = tmp_path / "words.ipynb"
    nbformat.write(nb, target)
    return report(run_visible_tests(target, timeout=60), target)


def test_a_provided_cell_that_fails_first_is_the_machines_fault(released, tmp_path):
    text = _checked(released["first"], tmp_path)
    assert "FileNotFoundError" in text and CLAIM in text
    assert "this machine's fault, not your answer's" in text  # the test that needs WORDS
    assert "PASS  test_count" in text


def test_an_edited_provided_cell_is_not_claimed(released, tmp_path):
    def edit(nb):
        cell_of(nb, "data").source = DATA + "# my note\n"

    text = _checked(released["first"], tmp_path, edit)
    assert "FileNotFoundError" in text and CLAIM not in text


def test_a_provided_cell_after_the_students_code_is_not_claimed(released, tmp_path):
    text = _checked(released["after"], tmp_path)
    assert "FileNotFoundError" in text and CLAIM not in text
