"""Shared fixtures: a tiny assignment (fast to grade) and the real one, released once; from
tests/support/, `own_class` (a class of a test's own) and `browser` / `open_page` (chromium)."""

from pathlib import Path

import nbformat
import pytest

from grader.course import Course
from tests.support.classes import (
    own_class,  # noqa: F401  (a fixture)
    released_class,
    write_assignment,
)
from tests.support.notebooks import grade_cell, nbgrader_notebook, solution_cell, text_cell
from tests.support.pages import browser, open_page  # noqa: F401  (fixtures)


def tiny_notebook():
    """One function to write, one visible test that also warns on stderr, one hidden test."""
    return nbgrader_notebook([
        text_cell("Write `double(x)`.", "intro"),
        solution_cell(
            "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION",
            "double"),
        grade_cell(
            "import sys, warnings\n"
            "warnings.warn('a library warning on stderr')\n"
            "print('more noise', file=sys.stderr)\n"
            "assert double(2) == 4, 'double(2) should be 4'",
            "test_double", points=2),
        grade_cell(
            "# hidden\n### BEGIN HIDDEN TESTS\nassert double(-3) == -6\n### END HIDDEN TESTS",
            "test_double_hidden", points=3),
    ])


@pytest.fixture
def tiny_course(tmp_path) -> Course:
    write_assignment(tmp_path / "assignments", "tiny", tiny_notebook())
    return released_class(tmp_path, "tiny", source=tmp_path / "assignments").course


@pytest.fixture(scope="session")
def self_attention_release(tmp_path_factory) -> tuple[Course, Path]:
    mine = released_class(tmp_path_factory.mktemp("sa"), "self_attention")
    return mine.course, mine.released


@pytest.fixture
def course(tmp_path) -> Course:
    """A course whose one assignment, `hw`, has one notebook (nothing is released or run)."""
    write_assignment(tmp_path / "src", "hw", nbformat.v4.new_notebook())
    return Course(tmp_path / "course", source=tmp_path / "src")
