"""Attacks on the intake (a submission is data, never a path to follow), through
`python -m grader autograde` and `python -m grader feedback`, in one batch.

Attackers' names sort before the two honest controls (z_control_*), so a submission that broke
the batch would cost the controls their grades. Every target an attacker links to lives outside
the course and is hashed before and after; each holds a unique secret that must appear in no
feedback page.
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from grader.course import REPO

from .attacks import FULL, Attack, build

pytestmark = pytest.mark.slow

SECRET = "SECRET-7f3a9c-do-not-leak"
CONTROLS = ("z_control_1", "z_control_2")
NOTEBOOK = "soft_select.ipynb"


def hashes(paths: list[Path]) -> dict[str, str]:
    """Content hash of every file under `paths` (links not followed)."""
    found = {}
    for top in paths:
        for path in sorted([top, *top.rglob("*")] if top.is_dir() else [top]):
            if path.is_file() and not path.is_symlink():
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def links_under(root: Path) -> list[str]:
    return [os.path.join(d, n) for d, dirs, files in os.walk(root) for n in dirs + files
            if os.path.islink(os.path.join(d, n))]


@pytest.fixture(scope="module")
def batch(own_class):
    mine = own_class("intake")
    tmp, course, released, subs = mine.root, mine.course, mine.released, mine.submissions

    # Targets outside the course: an /etc-like file, and the instructor's source folder (a copy
    # with the full-marks source notebook, so following the link would earn every point).
    etc = tmp / "etc"
    etc.mkdir()
    (etc / "passwd").write_text(f"root:x:0:0:{SECRET}:/root:/bin/bash\n")
    instructor = tmp / "instructor" / "soft_select"
    instructor.mkdir(parents=True)
    build(Attack("source", "", answers="correct"), released, instructor)
    (instructor / "answers.txt").write_text(f"the answer key {SECRET}\n")

    def student(name, answers="wrong", **files):
        folder = subs / name / "soft_select"
        build(Attack(name, "", answers=answers, files=files), released, folder)
        return folder

    for name in CONTROLS:
        student(name, answers="correct")
    classmate = subs / CONTROLS[0] / "soft_select" / NOTEBOOK

    # -- the notebook, the assignment folder, the student folder: links to full marks
    folder = student("a01_notebook_symlink")
    (folder / NOTEBOOK).unlink()
    (folder / NOTEBOOK).symlink_to(os.path.relpath(classmate, folder))
    (subs / "a02_folder_symlink").mkdir()
    (subs / "a02_folder_symlink" / "soft_select").symlink_to(instructor,
                                                             target_is_directory=True)
    (subs / "a03_student_symlink").symlink_to(subs / CONTROLS[0], target_is_directory=True)
    # -- links beside a wrong notebook: to a secret, to the instructor's folder, dangling
    folder = student("a04_symlinks_beside")
    (folder / "passwd").symlink_to(etc / "passwd")
    (folder / "instructor").symlink_to(instructor, target_is_directory=True)
    (folder / "gradebook.db").symlink_to(course.root / "gradebook.db")
    folder = student("a05_dangling_symlink", answers="correct")
    (folder / "helper.py").symlink_to(tmp / "no-such-file.py")
    # -- hard links: the notebook to the instructor's full-marks notebook, a file to the secret
    folder = student("a06_hardlink_notebook")
    (folder / NOTEBOOK).unlink()
    os.link(instructor / NOTEBOOK, folder / NOTEBOOK)
    folder = student("a07_hardlink_beside", answers="correct")
    os.link(etc / "passwd", folder / "passwd.txt")
    # -- a FIFO beside a correct notebook (opening it would block the intake forever)
    folder = student("a08_fifo", answers="correct")
    os.mkfifo(folder / "pipe")
    os.mkfifo(folder / "results.csv")
    # -- a forged submission time, and a forged feedback page
    student("a09_timestamp", answers="correct",
            **{"timestamp.txt": "2000-01-01 00:00:00.000000 UTC"})
    student("a10_fake_feedback_page", **{"soft_select.html": f"<h1>15 / 15</h1>{SECRET}"})
    # -- a huge number of files
    folder = student("a11_many_files", answers="correct")
    (folder / "cache").mkdir()
    for i in range(2500):
        (folder / "cache" / f"{i}.txt").write_text("x")

    outside = hashes([etc, instructor, REPO / "assignments" / "soft_select", classmate])
    started = datetime.now(UTC).replace(tzinfo=None)
    run = mine.autograde("--cell-timeout", "30", "--notebook-timeout", "120", timeout=900)
    finished = datetime.now(UTC).replace(tzinfo=None)
    status = mine.status()
    pages = tmp / "pages"
    fb = mine.feedback(pages)
    changed = {p for p, h in hashes([etc, instructor, REPO / "assignments" / "soft_select",
                                     classmate]).items() if outside.get(p) != h}
    return dict(course=course, run=run, status=status, fb=fb, pages=pages, changed=changed,
                started=started, finished=finished, subs=subs)


# student -> expected autograded points (None: an error row), words its error or flag must hold
EXPECTED = {
    "a01_notebook_symlink": (None, f"{NOTEBOOK} is a symbolic link to ../../{CONTROLS[0]}/"
                                   f"soft_select/{NOTEBOOK}: not graded"),
    "a02_folder_symlink": (None, "soft_select/ in a02_folder_symlink's folder is a symbolic "
                                 "link to"),
    "a03_student_symlink": (None, "student folder a03_student_symlink is a symbolic link to"),
    "a04_symlinks_beside": (0, "passwd is a symbolic link to"),
    "a05_dangling_symlink": (FULL, "helper.py is a symbolic link to"),
    "a06_hardlink_notebook": (None, f"{NOTEBOOK} is a hard link to a file outside the "
                                    "submission"),
    "a07_hardlink_beside": (FULL, "passwd.txt is a hard link to a file outside the submission"),
    "a08_fifo": (FULL, "pipe is a FIFO (named pipe): not graded"),
    "a09_timestamp": (FULL, "timestamp.txt was written by the student"),
    "a10_fake_feedback_page": (0, "soft_select.html has the name of the feedback page"),
    "a11_many_files": (None, "a11_many_files's submission has more than 2000 files"),
}


def test_the_batch_ends_and_controls_keep_full_marks(batch):
    run, status = batch["run"], batch["status"]
    # exit status 1: the batch ran to its end, with error rows (the attacks with no points)
    assert run.returncode == (1 if any(p is None for p, _ in EXPECTED.values()) else 0), \
        run.stdout[-3000:] + run.stderr[-3000:]
    assert set(status) == set(EXPECTED) | set(CONTROLS), "every student has a row"
    for name in CONTROLS:
        assert status[name]["error"] is None and status[name]["auto_score"] == FULL, \
            status[name]
        assert status[name]["flags"] == []


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_attacker_outcome(batch, name):
    points, words = EXPECTED[name]
    row = batch["status"][name]
    if points is None:
        assert row["auto_score"] == 0
        assert row["error"] and words in row["error"], row
    else:
        assert row["error"] is None, row
        assert row["auto_score"] == points, row
        intake = [f["detail"] for f in row["flags"] if f["kind"] == "intake"]
        assert any(words in d for d in intake), f"{name}: {intake}"


def test_every_link_beside_the_notebook_is_named(batch):
    details = {f["detail"] for f in batch["status"]["a04_symlinks_beside"]["flags"]}
    for name in ("passwd", "instructor", "gradebook.db"):
        assert any(d.startswith(f"{name} is a symbolic link to ") for d in details), details


def test_gradebook_agrees_and_the_time_is_the_intake_time(batch):
    course = batch["course"]
    with course.gradebook() as gb:
        for name in CONTROLS + ("a05_dangling_symlink", "a08_fifo", "a09_timestamp"):
            assert gb.find_submission("soft_select", name).code_score == FULL
        when = gb.find_submission("soft_select", "a09_timestamp").timestamp
    assert batch["started"] <= when <= batch["finished"], (
        f"recorded {when}, not the intake time (between {batch['started']} and "
        f"{batch['finished']}); the student wrote 2000-01-01")


def test_no_link_anywhere_in_the_course(batch):
    course = batch["course"]
    for folder in (course.submitted, course.autograded, course.feedback):
        assert folder.is_dir()
        assert links_under(folder) == [], f"links in {folder}"


def test_no_file_outside_the_course_changed(batch):
    assert batch["changed"] == set()


def test_feedback_holds_only_generated_pages(batch):
    fb, pages = batch["fb"], batch["pages"]
    assert fb.returncode == 0, fb.stdout[-2000:] + fb.stderr[-2000:]
    delivered = sorted(p.name for p in pages.iterdir())
    graded = sorted(n for n, row in batch["status"].items() if row["error"] is None)
    assert delivered == [f"{n}.html" for n in graded], "one generated page per graded student"
    for page in pages.iterdir():
        assert page.is_file() and not page.is_symlink()
        text = page.read_text()
        assert text.lstrip().lower().startswith("<!doctype html>"), page
        assert SECRET not in text, f"{page.name} leaks a link target"
        assert "15 / 15</h1>" not in text, f"{page.name} is the student's forged page"


def test_feedback_folders_never_get_the_secret(batch):
    """nbgrader carries a submission's other files into feedback/: none of them may hold a
    link target's content."""
    for path in batch["course"].feedback.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_a_fifo_did_not_block(batch):
    """The whole run (13 students) finished: a blocked open() would have hit the timeout."""
    assert "a08_fifo" in batch["run"].stdout


def test_the_originals_are_untouched(batch):
    subs = batch["subs"]
    assert (subs / "a01_notebook_symlink" / "soft_select" / NOTEBOOK).is_symlink()
    assert (subs / "a09_timestamp" / "soft_select" / "timestamp.txt").read_text() == \
        "2000-01-01 00:00:00.000000 UTC"
    assert len(list((subs / "a11_many_files" / "soft_select" / "cache").iterdir())) == 2500

