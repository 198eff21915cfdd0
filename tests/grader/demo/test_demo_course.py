"""`python -m grader demo --course DIR` works in DIR alone: its own files go to DIR/demo/, and
build/demo/ (`make demo`'s, for build/course) is neither written nor removed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import grader.demo.run
from grader.cli import main
from grader.course import DEFAULT_COURSE
from grader.demo.run import files_of


@pytest.fixture
def demo_without_grading(tmp_path, monkeypatch):
    """The demo's command with its grading and export replaced by stand-ins that write the files
    the demo writes; build/demo stands at tmp/build-demo, holding a file of an earlier run. What
    the demo removes is recorded (and removed only under tmp)."""
    made = tmp_path / "build-demo"
    (made / "reports").mkdir(parents=True)
    (made / "reports" / "earlier.html").write_text("an earlier `make demo`")
    monkeypatch.setattr(grader.demo.run, "DEMO_FILES", made)
    removed: list[Path] = []
    rmtree = shutil.rmtree

    def recorded(path, *args, **kwargs):
        removed.append(Path(path))
        if Path(path).is_relative_to(tmp_path):  # a demo gone wrong removes nothing real
            rmtree(path, *args, **kwargs)

    def graded(course, assignment, out, say, unconfined=False):
        (out / "feedback" / assignment).mkdir(parents=True, exist_ok=True)
        (out / "feedback" / assignment / "alice.html").write_text("feedback")
        return []

    def exported(course, to):
        to.write_text("assignment,student_id\n")
        return to

    monkeypatch.setattr(grader.demo.run.shutil, "rmtree", recorded)
    monkeypatch.setattr(grader.demo.run, "grade_sample_class", graded)
    monkeypatch.setattr(grader.demo.run, "export", exported)
    monkeypatch.setattr(grader.demo.run, "table", lambda assignment, rows: assignment)
    monkeypatch.setattr(grader.demo.run, "next_steps", lambda course, rows: [])
    monkeypatch.delenv("GRADER_COURSE", raising=False)
    return made, removed


def test_a_demo_on_a_course_of_ones_own_leaves_build_demo_alone(tmp_path, demo_without_grading):
    made, removed = demo_without_grading
    mine = tmp_path / "mine"
    for _ in range(2):  # the second run replaces the first's files, inside DIR
        assert main(["demo", "--course", str(mine)]) == 0
    assert (made / "reports" / "earlier.html").read_text() == "an earlier `make demo`"
    assert sorted(p.name for p in made.iterdir()) == ["reports"]
    assert (mine / "demo" / "grades.csv").is_file()
    assert (mine / "demo" / "feedback" / "soft_select" / "alice.html").is_file()
    assert (mine / grader.demo.run.MARK).is_file()
    assert removed and all(p.is_relative_to(mine) for p in removed), removed


def test_the_demo_keeps_build_demo_for_its_own_course(tmp_path):
    assert files_of(DEFAULT_COURSE) == grader.demo.run.DEMO_FILES
    assert grader.demo.run.DEMO_FILES == DEFAULT_COURSE.root.parent / "demo"
    assert files_of(type(DEFAULT_COURSE)(tmp_path / "mine")) == tmp_path / "mine" / "demo"


def test_a_course_given_keeps_what_is_not_the_demos_in_its_folder(tmp_path,
                                                                 demo_without_grading):
    """Only the demo's own files (OWN) are replaced in DIR/demo/: a file of the user's there
    stays."""
    mine = tmp_path / "mine"
    (mine / "demo").mkdir(parents=True)
    (mine / "demo" / "notes.txt").write_text("mine")
    (mine / "demo" / "grades.csv").write_text("old")
    assert main(["demo", "--course", str(mine)]) == 0
    assert (mine / "demo" / "notes.txt").read_text() == "mine"
    assert (mine / "demo" / "grades.csv").read_text() == "assignment,student_id\n"
