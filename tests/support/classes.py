"""A class of a test's own. tests/conftest.py's `sample_classes` (the demo, graded once a
session) is only read; a test that changes a course's state, or grades what the demo does not,
makes its own here:

- `released_class(root, assignment)`, or the `own_class` fixture (a factory, each call in a
  fresh folder): a course with one assignment released, its students' submissions written below
  ROOT/submissions (or another folder), graded, given feedback and reported through the CLI as an
  instructor types it;
- `write_assignment`: an assignment of the test's own (its source notebook);
- `write_class` / `write_sample_class` / `write_submission`: submissions as
  `autograde --submissions` reads them;
- `new_gradebook` / `add_assignment` / `add_submission` / `copy_of`: a gradebook filled straight
  through nbgrader's API (no notebook executed), and a copy of a course for a test that changes
  it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import nbformat
import pytest

from grader.course import REPO, Course
from grader.demo.sample_class import SAMPLE_CLASSES, Student, make_submission
from tests.support.cli import grader, on_course

ASSIGNMENTS = REPO / "assignments"


def write_assignment(source: Path, assignment: str, nb) -> Path:
    """`nb` as the source notebook of an assignment of the test's own: SOURCE/A/A.ipynb (a
    course's `source`). Returns the notebook's path."""
    (source / assignment).mkdir(parents=True)
    path = source / assignment / f"{assignment}.ipynb"
    nbformat.write(nb, path)
    return path


def write_submission(submissions: Path, student: str, assignment: str, nb) -> Path:
    """`nb` as STUDENT's submission of ASSIGNMENT: SUBMISSIONS/STUDENT/ASSIGNMENT/ASSIGNMENT.ipynb,
    as `autograde --submissions` reads it. Returns the student's folder."""
    folder = submissions / student / assignment
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{assignment}.ipynb")
    return folder


def write_class(submissions: Path, released: Path, students: Iterable[Student],
                source: Path | None = None) -> None:
    """Each student's submission of the released notebook RELEASED (COURSE/release/A/A.ipynb):
    the source's answers with the student's edits (grader.demo.sample_class.make_submission).
    `source`: the source notebook, by default the repository's."""
    assignment = released.parent.name
    source = source or ASSIGNMENTS / assignment / released.name
    for student in students:
        write_submission(submissions, student.id, assignment,
                         make_submission(source, released, student))


def sample_students(assignment: str, *ids: str) -> list[Student]:
    """The students of ASSIGNMENT's sample class (grader.demo.sample_class) with these ids, in
    the order given."""
    by_id = {s.id: s for s in SAMPLE_CLASSES[assignment]}
    return [by_id[i] for i in ids]


def write_sample_class(submissions: Path, course_root: Path, *ids: str,
                       assignment: str = "soft_select") -> None:
    """The sample class's students of these ids, as they hand in ASSIGNMENT released in the
    course at COURSE_ROOT (its release folder), below SUBMISSIONS."""
    write_class(submissions, course_root / "release" / assignment / f"{assignment}.ipynb",
                sample_students(assignment, *ids))


def status_of(course_root: Path, assignment: str, missing_ok: bool = False) -> dict:
    """The status file autograde wrote ({student: their row}); {} where there is none and
    `missing_ok`."""
    path = course_root / "status" / f"{assignment}.json"
    if missing_ok and not path.exists():
        return {}
    return json.loads(path.read_text())


@dataclass
class OwnClass:
    """A course at ROOT/course with ASSIGNMENT released (the notebook RELEASED); the class's
    submissions go below SUBMISSIONS (ROOT/submissions unless said)."""

    root: Path
    course: Course
    assignment: str
    released: Path
    submissions: Path | None = None  # ROOT/submissions when None

    def __post_init__(self):
        if self.submissions is None:
            self.submissions = self.root / "submissions"

    @property
    def notebook(self) -> str:
        return self.released.name

    @property
    def source(self) -> Path:
        """The assignment's source notebook (every answer, every hidden test)."""
        return self.course.source / self.assignment / self.notebook

    def folder(self, student: str) -> Path:
        """Where STUDENT's submission goes (not made)."""
        return self.submissions / student / self.assignment

    def write(self, student: str, nb) -> Path:
        return write_submission(self.submissions, student, self.assignment, nb)

    def write_class(self, students: Iterable[Student]) -> None:
        write_class(self.submissions, self.released, students, self.source)

    def write_expecting(self, made: Mapping[str, tuple[object, object]]) -> dict:
        """MADE: {student: (their notebook, what grading it must come to)}; each notebook
        written, and {student: what it must come to} returned."""
        for student, (nb, _) in made.items():
            self.write(student, nb)
        return {student: expected for student, (_, expected) in made.items()}

    def cli(self, *args: str, timeout: float = 600, env: dict | None = None
            ) -> subprocess.CompletedProcess:
        """`python -m grader --course COURSE ARGS...` (text)."""
        return on_course(self.course.root, *args, timeout=timeout, text=True, env=env)

    def autograde(self, *options: str, timeout: float = 900, env: dict | None = None
                  ) -> subprocess.CompletedProcess:
        """`autograde ASSIGNMENT --submissions SUBMISSIONS OPTIONS...` through the CLI."""
        return self.cli("autograde", self.assignment, "--submissions", str(self.submissions),
                        *options, timeout=timeout, env=env)

    def feedback(self, to: Path, *options: str, timeout: float = 600, env: dict | None = None
                 ) -> subprocess.CompletedProcess:
        """`feedback ASSIGNMENT --to TO OPTIONS...` through the CLI."""
        return self.cli("feedback", self.assignment, "--to", str(to), *options,
                        timeout=timeout, env=env)

    def status(self, missing_ok: bool = False) -> dict:
        return status_of(self.course.root, self.assignment, missing_ok)


def released_class(root: Path, assignment: str = "soft_select", *, source: Path = ASSIGNMENTS,
                   through_cli: bool = False, submissions: Path | None = None) -> OwnClass:
    """ASSIGNMENT of SOURCE released into a course at ROOT/course: by grader.nbgrader.release,
    or, `through_cli`, by `python -m grader --course COURSE release ASSIGNMENT` run in ROOT."""
    if through_cli:
        course = Course(root / "course")
        done = grader("--course", str(course.root), "release", assignment, cwd=root)
        assert done.returncode == 0, done.stderr
        folder = course.release / assignment
    else:
        from grader.nbgrader.release import release

        course = Course(root / "course", source=source)
        folder = release(course, assignment)
    return OwnClass(root, course, assignment, folder / f"{assignment}.ipynb", submissions)


@pytest.fixture(scope="session")
def own_class(tmp_path_factory) -> Callable[..., OwnClass]:
    """A factory: `own_class(name, assignment, ...)` is `released_class` in a fresh folder
    (tmp_path_factory.mktemp(name)), for fixtures of any scope."""
    def make(name: str, assignment: str = "soft_select", **kwargs) -> OwnClass:
        return released_class(tmp_path_factory.mktemp(name), assignment, **kwargs)
    return make


# ----- a gradebook filled through nbgrader's API ----------------------------------------------

@contextlib.contextmanager
def new_gradebook(folder: Path) -> Iterator[tuple[Course, object]]:
    """An empty course at FOLDER/course and its gradebook open (nbgrader's Gradebook), for the
    caller to fill: (the course, the gradebook). Creating a gradebook costs seconds (nbgrader
    asks alembic): a module's tests share one, and copy it where they change it."""
    from grader.nbgrader.config import setup_process

    setup_process()
    course = Course(folder / "course")
    course.root.mkdir()
    with course.gradebook() as gb:
        yield course, gb


def add_assignment(gb, name: str, points: Iterable[float], duedate: datetime) -> None:
    """An assignment of one notebook (its name) with a code grade cell test_I of each points."""
    gb.add_assignment(name, duedate=duedate)
    gb.add_notebook(name, name)
    for i, max_score in enumerate(points):
        gb.add_grade_cell(f"test_{i}", name, name, max_score=max_score, cell_type="code")


def add_submission(gb, assignment: str, student: str, scores: Iterable[float], *,
                   timestamp: str | datetime, late_penalty: float | None = None) -> None:
    """STUDENT's submission of ASSIGNMENT, autograded: its grade cells' scores by their names'
    order; its late penalty where given (nbgrader's None otherwise). Committed."""
    submission = gb.add_submission(assignment, student, timestamp=timestamp)
    notebook = submission.notebooks[0]
    for cell_grade, score in zip(sorted(notebook.grades, key=lambda g: g.name), scores,
                                 strict=True):
        cell_grade.auto_score = score
    if late_penalty is not None:
        notebook.late_submission_penalty = late_penalty
    gb.db.commit()


def copy_of(course: Course, folder: Path) -> Course:
    """A copy of the course's folder (its gradebook with it) at FOLDER/course, for a test that
    changes it."""
    shutil.copytree(course.root, folder / "course")
    return Course(folder / "course")
