"""An error raised by a test's own code, on something the student's code returned or defined,
reaches the graded notebook and the feedback page with the test's line and what it means, the
line's code left out when it is a hidden test's (issue 50, section 4: instructor-side errors
wrapped with advice). Graded through autograde and feedback, as an instructor does."""

from __future__ import annotations

import nbformat
import pytest

from grader.outputs.feedback import feedback
from grader.pipeline.autograde import autograde
from tests.support.classes import released_class, write_assignment
from tests.support.notebooks import grade_cell, nbgrader_notebook, solution_cell, text_cell
from tests.support.pages import feedback_pages

VISIBLE = ("import torch\n"
           "out, total = attend(torch.ones(3, 2))\n"
           "assert out.shape == (3, 2), 'the output keeps the shape of x'")
HIDDEN = ("### BEGIN HIDDEN TESTS\n"
          "out, total = attend(torch.zeros(4, 1))\n"
          "assert float(total) == 0\n"
          "### END HIDDEN TESTS")
ANSWERS = {
    "good": "def attend(x):\n    return x, x.sum()",
    "one_value": "def attend(x):\n    return x",  # the tuple the tests unpack is missing
    "misspelt": "def atend(x):\n    return x, x.sum()",
    "off_by_one": "def attend(x):\n    return x, x.sum() + 1",  # a bare assert fails
}


def errors_notebook():
    return nbgrader_notebook([
        text_cell("Write `attend(x)`: `(x, x.sum())`.", "intro"),
        solution_cell(
            "### BEGIN SOLUTION\ndef attend(x):\n    return x, x.sum()\n### END SOLUTION",
            "attend"),
        grade_cell(VISIBLE, "test_attend", points=1),
        grade_cell(HIDDEN, "test_attend_hidden", points=1),
    ])


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("errors")
    write_assignment(tmp / "src", "errs", errors_notebook())
    mine = released_class(tmp, "errs", source=tmp / "src", submissions=tmp / "subs")
    course = mine.course
    for student, answer in ANSWERS.items():
        nb = nbformat.read(mine.released, as_version=4)
        next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")).source = \
            answer
        mine.write(student, nb)
    results = {r.student: r for r in autograde(course, "errs", mine.submissions)}
    feedback(course, "errs", to=tmp / "feedback")
    errors = {}
    for student in ANSWERS:
        nb = nbformat.read(course.autograded / student / "errs" / "errs.ipynb", as_version=4)
        errors[student] = {c.metadata["nbgrader"]["grade_id"]: o["evalue"] for c in nb.cells
                           for o in c.get("outputs", []) if o.get("output_type") == "error"}
    pages = feedback_pages(tmp / "feedback", ANSWERS)
    return results, errors, pages


def test_the_right_answer_gets_every_point_and_no_error(graded):
    results, errors, _ = graded
    assert results["good"].score == 2 and errors["good"] == {}


def test_a_visible_tests_error_names_its_line_and_what_it_means(graded):
    results, errors, pages = graded
    message = errors["one_value"]["test_attend"]
    assert message.startswith("too many values to unpack")
    assert "at line 2 of the test: `out, total = attend(torch.ones(3, 2))`" in message
    assert "not inside your code" in message and "a tensor or a tuple" in message
    assert results["one_value"].score == 0
    assert "at line 2 of the test" in pages["one_value"]


def test_a_hidden_tests_error_says_so_without_its_code(graded):
    _, errors, pages = graded
    message = errors["one_value"]["test_attend_hidden"]
    assert "at a line of the hidden tests" in message and "zeros(4, 1)" not in message
    assert "zeros(4, 1)" not in pages["one_value"]
    bare = errors["off_by_one"]["test_attend_hidden"]  # `assert float(total) == 0`, no message
    assert bare == "the test's check failed at a line of the hidden tests"
    assert "float(total)" not in pages["off_by_one"]


def test_a_name_the_notebook_never_defined_is_named_as_such(graded):
    _, errors, _ = graded
    message = errors["misspelt"]["test_attend"]
    assert "name 'attend' is not defined" in message
    assert "at line 2 of the test" in message and "defined no such name" in message


def test_a_checks_own_message_is_left_as_it_is(graded):
    _, errors, _ = graded
    # the visible assert has a message of its own: nothing is added to it
    assert errors["off_by_one"] == {"test_attend_hidden":
                                    "the test's check failed at a line of the hidden tests"}


HIDDEN_REGIONS = {
    "nbgrader's own delimiters": ("a = 1\n### BEGIN HIDDEN TESTS\nb = 2\n### END HIDDEN TESTS\n"
                                  "c = 3"),
    "one hash": "a = 1\n# BEGIN HIDDEN TESTS\nb = 2\nb2 = 2\n# END HIDDEN TESTS\nc = 3",
    "indented, in a loop": ("for i in range(2):\n    a = i\n    ### BEGIN HIDDEN TESTS\n"
                            "    b = i\n    ### END HIDDEN TESTS\nc = 3"),
    "two regions": ("a = 1\n### BEGIN HIDDEN TESTS (1)\nb = 2\n### END HIDDEN TESTS (1)\n"
                    "c = 3\n### BEGIN HIDDEN TESTS (2)\nd = 4\n### END HIDDEN TESTS (2)\n"
                    "e = 5"),
    "lower case: not a delimiter": "a = 1\n### begin hidden tests\nb = 2",
    "none": "a = 1\nb = 2",
}


@pytest.mark.parametrize("case", HIDDEN_REGIONS)
def test_hidden_lines_are_the_lines_nbgrader_removes(case):
    """A failing test's line is quoted only when the student was shown it: the judge reads the
    hidden region as nbgrader's ClearHiddenTests does on release (a one-hash delimiter hides
    lines too), not by a rule of its own."""
    from nbgrader.preprocessors import ClearHiddenTests

    from grader.judge.notebook import _hidden

    source = HIDDEN_REGIONS[case]
    cell = grade_cell(source, "t", points=1)
    ClearHiddenTests()._remove_hidden_test_region(cell)
    kept = set(cell.source.splitlines())
    lines = source.splitlines()
    assert len(set(lines)) == len(lines)  # every line tells which one it is
    assert [not _hidden(lines, at) for at in range(1, len(lines) + 1)] == [
        line in kept for line in lines]
