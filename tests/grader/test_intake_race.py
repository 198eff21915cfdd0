"""A submission changed by its owner while the intake copies it (a student racing `collect` on
the hub): the intake's error for that student, never an exception that stops the batch.
The race is made certain: a file, a link or a folder is removed between the listing of its
folder and the intake's look at it. (tests/hub/test_student_attacks.py races a real collect.)"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import nbformat
import pytest

from grader import intake
from grader.intake import IntakeError, take_in


@pytest.fixture
def sub(tmp_path) -> Path:
    folder = tmp_path / "submissions" / "alice" / "hw"
    folder.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), folder / "hw.ipynb")
    (folder / "notes.txt").write_text("mine")
    (folder / "data").mkdir()
    (folder / "data" / "table.csv").write_text("a,b\n")
    os.symlink("hw.ipynb", folder / "link")
    return folder


def listed_then(monkeypatch, change) -> None:
    """The intake's next listing of a folder is taken, then `change` runs, then the intake
    goes on with the listing (as when the owner is faster than the copy)."""
    real = os.scandir
    done = []

    def scandir(fd):
        if not isinstance(fd, int):  # not the intake's walk (which lists through fds)
            return real(fd)
        with real(fd) as it:
            entries = list(it)
        if not done:
            done.append(change())
        return contextlib.nullcontext(entries)

    monkeypatch.setattr(intake.os, "scandir", scandir)


@pytest.mark.parametrize("change, name", [
    (lambda f: (f / "notes.txt").unlink(), "notes.txt"),
    (lambda f: (f / "link").unlink(), "link"),
    (lambda f: ((f / "data" / "table.csv").unlink(), (f / "data").rmdir()), "data"),
])
def test_a_file_changed_between_listing_and_copy_is_that_students_error(
        course, sub, monkeypatch, change, name):
    listed_then(monkeypatch, lambda: change(sub))
    with pytest.raises(IntakeError) as e:
        take_in(course, "hw", "alice", sub)
    assert f"alice's submission changed while it was taken in ({name}:" in str(e.value)
    assert not (course.submitted / "alice" / "hw").exists(), "half a submission was kept"


def test_left_alone_the_same_submission_is_taken_in(course, sub):
    taken = take_in(course, "hw", "alice", sub)  # the control: nothing raced
    assert (taken.folder / "notes.txt").read_text() == "mine"
    assert "link" in taken.left_out
