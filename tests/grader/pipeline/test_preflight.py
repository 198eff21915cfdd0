"""The grader checks itself before it charges anyone (grader/pipeline/preflight.py,
grader/pipeline/held.py): the instructor's solution graded first in the same environment, a
failure of it stopping the run before any grade; its verdict cached per environment and source;
a test every student fails with one error held before feedback and export."""

from __future__ import annotations

import json
import os
import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from grader.nbgrader import gradebook
from tests.support.classes import released_class, write_assignment
from tests.support.notebooks import (
    grade_cell,
    nbgrader_cell,
    nbgrader_notebook,
    solution_cell,
    text_cell,
)

ANSWER = "### BEGIN SOLUTION\ndef count(words):\n    return len(words)\n### END SOLUTION"
TEST = "assert count(['a', 'b']) == 2, 'count two words'"
# A provided cell that reads a file this machine does not have (the capstone's data, in small).
MISSING_DATA = ("from pathlib import Path\n"
                "DATA = Path('/nonexistent/course-data/words.txt')\n"
                "if not DATA.is_file():\n"
                "    raise FileNotFoundError(f'{DATA} is missing: install the course data')\n")
PRESENT_DATA = "WORDS = ['attention', 'is', 'all']\n"
USES_DATA = "assert count(WORDS) == 3, 'count the data'"


def notebook(data: str = PRESENT_DATA, test: str = TEST):
    return nbgrader_notebook([
        text_cell("Count the words.", "intro"),
        nbgrader_cell(new_code_cell(data), "data"),  # provided: locked, not graded
        solution_cell(ANSWER, "count"),
        grade_cell(test, "test_count", points=1),
        grade_cell(USES_DATA, "test_count_data", points=1),
    ])


def a_class(tmp_path, nb, students=("ann", "ben", "cat"), answer=None):
    """The assignment `nb` released, and each student's submission: the solution's answer (or
    `answer` in its place)."""
    write_assignment(tmp_path / "src", "counting", nb)
    mine = released_class(tmp_path, "counting", source=tmp_path / "src")
    for student in students:
        released = nbformat.read(mine.released, as_version=4)
        for cell in released.cells:
            if cell.metadata.get("nbgrader", {}).get("solution"):
                cell.source = answer or ANSWER
        mine.write(student, released)
    return mine


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("GRADER_PREFLIGHT_CACHE", str(folder))
    return folder


def graded_students(mine) -> list[str]:
    with mine.course.gradebook() as gb:
        return [s for s in ("ann", "ben", "cat")
                if gradebook.submission(gb, mine.assignment, s) is not None]


def test_a_fault_of_the_machine_grades_no_one_and_names_what_is_missing(tmp_path, cache):
    mine = a_class(tmp_path, notebook(data=MISSING_DATA))
    run = mine.autograde()
    assert run.returncode == 4, run.stdout + run.stderr
    assert "earns 1 of 2 autograded points on this machine" in run.stderr
    # the grader's own copy of the provided cell failed first (grader.judge.notebook)
    assert ("first error: cell 2: the instructor's code failed on the grader's side "
            "(FileNotFoundError: /nonexistent/course-data/words.txt is missing") in run.stderr
    assert "failing tests: test_count_data (1 point)\n" in run.stderr  # (test_count needs no data)
    assert graded_students(mine) == []  # nothing recorded
    assert not mine.course.autograded.exists() or not any(mine.course.autograded.iterdir())
    assert not (mine.course.root / "status" / "counting.json").exists()
    assert not cache.exists() or not any(cache.iterdir())  # a failure is never cached


def test_a_source_whose_test_fails_on_its_own_solution_grades_no_one(tmp_path, cache):
    mine = a_class(tmp_path, notebook(test="assert count(['a', 'b']) == 3, 'miscounted'"))
    run = mine.autograde()
    assert run.returncode == 4, run.stdout + run.stderr
    assert "earns 1 of 2 autograded points" in run.stderr
    assert "first error: counting.ipynb, test_count (a test): AssertionError: miscounted" \
        in run.stderr
    assert graded_students(mine) == []


def test_the_verdict_is_paid_once_per_environment_and_source(tmp_path, cache):
    mine = a_class(tmp_path, notebook())
    first = mine.autograde()
    assert first.returncode == 0, first.stdout + first.stderr
    assert "after the instructor's solution" in first.stdout
    assert "the instructor's solution earns 2 / 2 here" in first.stdout
    assert graded_students(mine) == ["ann", "ben", "cat"]
    assert len(list(cache.iterdir())) == 1
    again = mine.autograde("--force")
    assert again.returncode == 0 and "instructor's solution" not in again.stdout
    # other limits are another environment: checked again
    limits = mine.autograde("--force", "--cell-timeout", "30")
    assert "after the instructor's solution" in limits.stdout
    assert len(list(cache.iterdir())) == 2


def test_a_test_every_student_fails_alike_is_held_before_feedback_and_export(tmp_path, cache):
    wrong = "def count(words):\n    return 0"
    mine = a_class(tmp_path, notebook(), answer=wrong)
    run = mine.autograde()
    assert run.returncode == 4, run.stdout + run.stderr
    assert "counting is held" in run.stderr
    assert "counting: test_count (3 students): AssertionError: count two words" in run.stderr
    assert graded_students(mine) == ["ann", "ben", "cat"]  # recorded, not given back
    held = json.loads((mine.course.root / "status" / "run" / "counting.json").read_text())
    assert [h["test"] for h in held["held"]] == ["counting: test_count",
                                                 "counting: test_count_data"]
    refused = mine.feedback(tmp_path / "pages")
    assert refused.returncode == 2 and "counting is held" in refused.stderr
    assert not (tmp_path / "pages").exists()
    exported = mine.cli("export", "--to", str(tmp_path / "grades.csv"))
    assert exported.returncode == 2 and not (tmp_path / "grades.csv").exists()
    accepted = mine.feedback(tmp_path / "pages", "--accept-held")
    assert accepted.returncode == 0, accepted.stderr
    assert mine.cli("export", "--to", str(tmp_path / "grades.csv"), "--accept-held") \
        .returncode == 0


def test_two_students_alike_are_no_evidence_against_the_machine(tmp_path, cache):
    mine = a_class(tmp_path, notebook(), students=("ann", "ben"),
                   answer="def count(words):\n    return 0")
    run = mine.autograde()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "held" not in run.stderr


@pytest.mark.slow  # the capstone's sample students, executed beside the solution (~45 s)
def test_the_capstone_without_its_data_grades_no_one_and_names_it(tmp_path, cache):
    from grader.demo.sample_class import SAMPLE_CLASSES

    mine = released_class(tmp_path, "tiny_gpt")
    mine.write_class(SAMPLE_CLASSES["tiny_gpt"][:3])  # the perfect student among them
    (tmp_path / "elsewhere").mkdir()  # the data hidden: the override points at nothing
    run = mine.autograde(env={**os.environ, "PYTHON_DOCS_SOURCES": str(tmp_path / "elsewhere")})
    assert run.returncode == 4, run.stdout + run.stderr
    score = re.search(r"earns (\S+) of 16 autograded points", run.stderr)
    assert score and float(score.group(1)) < 16, run.stderr
    first = next(line for line in run.stderr.splitlines() if "first error" in line)
    assert "FileNotFoundError" in first and "python3.11-doc" in first \
        and "PYTHON_DOCS_SOURCES" in first and str(tmp_path / "elsewhere") in first
    with mine.course.gradebook() as gb:
        assert [s.id for s in gb.students] == []  # no score recorded, for anyone
    assert not (mine.course.root / "status" / "tiny_gpt.json").exists()
