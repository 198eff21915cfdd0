"""Shared fixtures: a tiny assignment (fast to grade) and the real one, released once."""

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.course import REPO, Course
from grader.nbgrader.release import release
from tests.notebooks import nbgrader_cell


def tiny_notebook():
    """One function to write, one visible test that also warns on stderr, one hidden test."""
    return new_notebook(cells=[
        nbgrader_cell(new_markdown_cell("Write `double(x)`."), "intro"),
        nbgrader_cell(new_code_cell(
            "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"),
            "double", solution=True),
        nbgrader_cell(new_code_cell(
            "import sys, warnings\n"
            "warnings.warn('a library warning on stderr')\n"
            "print('more noise', file=sys.stderr)\n"
            "assert double(2) == 4, 'double(2) should be 4'"),
            "test_double", grade=True, points=2),
        nbgrader_cell(new_code_cell(
            "# hidden\n### BEGIN HIDDEN TESTS\nassert double(-3) == -6\n### END HIDDEN TESTS"),
            "test_double_hidden", grade=True, points=3),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                "language": "python"}})


@pytest.fixture
def tiny_course(tmp_path) -> Course:
    source = tmp_path / "assignments"
    (source / "tiny").mkdir(parents=True)
    nbformat.write(tiny_notebook(), source / "tiny" / "tiny.ipynb")
    course = Course(tmp_path / "course", source=source)
    release(course, "tiny")
    return course


@pytest.fixture(scope="session")
def self_attention_release(tmp_path_factory) -> tuple[Course, Path]:
    course = Course(tmp_path_factory.mktemp("sa") / "course", source=REPO / "assignments")
    folder = release(course, "self_attention")
    return course, folder / "self_attention.ipynb"


@pytest.fixture
def course(tmp_path) -> Course:
    """A course whose one assignment, `hw`, has one notebook (nothing is released or run)."""
    (tmp_path / "src" / "hw").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "src" / "hw" / "hw.ipynb")
    return Course(tmp_path / "course", source=tmp_path / "src")
