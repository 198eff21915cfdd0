"""`grader collect` (grader/nbgrader/collect.py): from nbgrader's exchange, who submitted is the
folder's
owner and when is the file system's change time, whatever the student's process wrote.

Submissions are made here by chown-ing folders to two system accounts (daemon, bin), so these
tests need root (CI runs as root); the same attacks by real students on a real hub are in
tests/hub/test_student_attacks.py.
"""

from __future__ import annotations

import dataclasses
import os
import pwd
import shutil
import time
from pathlib import Path

import nbformat
import pytest

from grader.course import COURSE_ID
from grader.nbgrader.collect import collect, exchange_time, load_manifest
from grader.nbgrader.release import publish

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand folders to users")
A, B = "daemon", "bin"  # accounts every Debian system has


@pytest.fixture
def course(tiny_course, tmp_path):
    course = dataclasses.replace(tiny_course, shared_exchange=tmp_path / "exchange")
    publish(course, "tiny")  # creates the course's exchange folders, inbound among them
    return course


def submit(course, name: str, owner: str, notebook: Path, timestamp: str = "") -> Path:
    """What a student's submit leaves in inbound: a folder, its notebook, timestamp.txt."""
    folder = course.exchange / COURSE_ID / "inbound" / name
    folder.mkdir()
    shutil.copy(notebook, folder / "tiny.ipynb")
    (folder / "timestamp.txt").write_text(timestamp or "2000-01-01 00:00:00.000000 UTC")
    uid = pwd.getpwnam(owner).pw_uid
    for path in (folder, *folder.iterdir()):
        os.chown(path, uid, uid)
    time.sleep(0.02)  # distinct ctimes
    return folder


def released(course) -> Path:
    return course.release / "tiny" / "tiny.ipynb"


def test_the_latest_by_the_file_system_is_collected_not_by_the_name(course):
    later_by_name = submit(course, f"{A}+tiny+2099-01-01 00:00:00.000000 UTC+x1", A,
                           released(course))
    nb = nbformat.read(released(course), as_version=4)
    nb.cells[1].source = "def double(x):\n    return x + x"
    nbformat.write(nb, later_by_name.parent / "answer.ipynb")
    truly_later = submit(course, f"{A}+tiny+2000-01-01 00:00:00.000000 UTC+x2", A,
                         later_by_name.parent / "answer.ipynb")
    record = collect(course, "tiny")
    taken = record["students"][A]
    assert taken["folder"] == truly_later.name
    expected = exchange_time(truly_later).strftime("%Y-%m-%d %H:%M:%S.%f %Z")
    assert taken["time"] == expected
    copy = course.submitted / A / "tiny"
    assert (copy / "timestamp.txt").read_text() == expected, "the student's timestamp was kept"
    assert "return x + x" in (copy / "tiny.ipynb").read_text()
    assert taken["flags"] == [], "nbgrader's own timestamp.txt is no reason for a flag"


def test_a_folder_in_someone_elses_name_is_refused(course):
    own = submit(course, f"{B}+tiny+2000-01-01 00:00:00.000000 UTC+b1", B, released(course))
    forged = submit(course, f"{B}+tiny+2001-01-01 00:00:00.000000 UTC+f1", A, released(course))
    record = collect(course, "tiny")
    assert record["students"][B]["folder"] == own.name
    assert record["refused"] == [{"folder": forged.name, "owner": A,
                                  "why": f"names {B} but belongs to {A}"}]
    assert A not in record["students"]


def test_odd_inbound_entries_never_stop_the_collect(course, tmp_path):
    inbound = course.exchange / COURSE_ID / "inbound"
    good = submit(course, f"{A}+tiny+not a date at all+x", A, released(course))
    (inbound / f"{B}+tiny+2000+link").symlink_to(tmp_path)  # a link to a folder
    os.lchown(inbound / f"{B}+tiny+2000+link", pwd.getpwnam(B).pw_uid, -1)
    (inbound / f"{B}+tiny+2000+file").write_text("not a folder")
    os.chown(inbound / f"{B}+tiny+2000+file", pwd.getpwnam(B).pw_uid, -1)
    deep = submit(course, f"{B}+tiny+2000+deep", B, released(course))
    nested = deep
    for _ in range(40):  # far past the intake's depth limit
        nested = nested / "d"
        nested.mkdir()
        os.chown(nested, pwd.getpwnam(B).pw_uid, -1)
    record = collect(course, "tiny")
    assert record["students"][A]["folder"] == good.name
    assert "error" in record["students"][B] and "nests folders" in record["students"][B]["error"]
    assert {r["folder"]: r["why"] for r in record["refused"]} == {
        f"{B}+tiny+2000+link": "is not a folder", f"{B}+tiny+2000+file": "is not a folder"}


def test_files_of_another_user_inside_a_submission_are_left_out(course):
    folder = submit(course, f"{A}+tiny+2000+x", A, released(course))
    (folder / "planted.py").write_text("print('from someone else')")
    os.chown(folder / "planted.py", pwd.getpwnam(B).pw_uid, -1)
    taken = collect(course, "tiny")["students"][A]
    assert taken["left_out"]["planted.py"] == f"belongs to {B}, not to the student"
    assert not (course.submitted / A / "tiny" / "planted.py").exists()


def test_autograde_without_a_collect_says_what_to_run(course, capsys):
    from grader.cli import main

    assert load_manifest(course, "tiny") == {"students": {}, "refused": []}
    code = main(["--course", str(course.root), "--exchange", str(course.exchange),
                 "autograde", "tiny", "--unconfined"])
    assert code == 2
    assert "nothing of tiny was collected" in capsys.readouterr().err
