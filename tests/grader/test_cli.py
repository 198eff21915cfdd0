"""`python -m grader`, as an instructor runs it: release, autograde, feedback, export."""

import csv
import subprocess
import sys

import nbformat
import pytest

from grader.course import REPO
from grader.demo.sample_class import SOFT_SELECT_CLASS, make_submission

pytestmark = pytest.mark.slow


def grader(*args, cwd):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def test_instructor_workflow_through_the_cli(tmp_path):
    course = tmp_path / "course"
    done = grader("--course", str(course), "release", "soft_select", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    released = course / "release" / "soft_select" / "soft_select.ipynb"
    assert released.exists()

    source = REPO / "assignments" / "soft_select" / "soft_select.ipynb"
    students = {s.id: s for s in SOFT_SELECT_CLASS}
    for student in ("alice", "carol"):
        folder = tmp_path / "subs" / student / "soft_select"
        folder.mkdir(parents=True)
        nbformat.write(make_submission(source, released, students[student]),
                       folder / "soft_select.ipynb")
    (tmp_path / "subs" / "mallory" / "soft_select").mkdir(parents=True)
    (tmp_path / "subs" / "mallory" / "soft_select" / "soft_select.ipynb").write_bytes(b"\xff\xfe")

    # Two sample students (and a broken file) graded here, not the session's demo class: this
    # checks the `autograde` command itself, in its own process, as an instructor runs it.
    done = grader("--course", str(course), "autograde", "soft_select",
                  "--submissions", str(tmp_path / "subs"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "alice        15 / 15 autograded" in done.stdout
    mallory = next(line for line in done.stdout.splitlines() if "mallory" in line)
    assert "ERROR" in mallory and "soft_select.ipynb" in mallory
    assert "Summary: 2 graded, 0 unchanged and skipped, 1 could not be graded" in done.stdout
    assert done.stderr.strip() == "", f"noise on stderr: {done.stderr}"

    done = grader("--course", str(course), "feedback", "soft_select", "--to",
                  str(tmp_path / "feedback"), cwd=tmp_path)
    assert (tmp_path / "feedback" / "carol.html").exists(), done.stdout + done.stderr

    done = grader("--course", str(course), "export", "--to", str(tmp_path / "grades.csv"),
                  cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {r["student_id"]: r for r in csv.DictReader(open(tmp_path / "grades.csv"))}
    assert set(rows) == {"alice", "carol", "mallory"}
    assert float(rows["alice"]["score"]) == 15.0 and float(rows["mallory"]["score"]) == 0.0


def test_cli_errors_are_clear(tmp_path):
    done = grader("--course", str(tmp_path / "c"), "release", "no_such_assignment", cwd=tmp_path)
    assert done.returncode == 2 and "no assignment 'no_such_assignment'" in done.stderr
    done = grader("--course", str(tmp_path / "c"), "autograde", "soft_select", "--submissions",
                  str(tmp_path / "missing"), cwd=tmp_path)
    assert done.returncode == 2 and "does not exist" in done.stderr
    done = grader("check", str(tmp_path / "nope.ipynb"), cwd=tmp_path)
    assert done.returncode == 2 and "no such notebook" in done.stderr


def test_the_pool_is_started_early_only_for_a_class(tmp_path):
    # One submission is graded in the command's own process: no fork server for it.
    import argparse

    from grader.cli import _a_class

    def args(submissions=None, workers=None, scheduler=None):
        return argparse.Namespace(submissions=submissions, workers=workers, scheduler=scheduler)

    (tmp_path / "alice").mkdir()
    assert not _a_class(args(tmp_path, workers=2))
    (tmp_path / "bob").mkdir()
    (tmp_path / "notes.txt").write_text("not a student")
    assert _a_class(args(tmp_path, workers=2))
    assert not _a_class(args(tmp_path, workers=1))
    assert not _a_class(args(tmp_path, workers=2, scheduler="tcp://127.0.0.1:8786"))
    assert not _a_class(args(tmp_path / "missing", workers=2))
    assert _a_class(args(None, workers=2))  # what was collected from the exchange
