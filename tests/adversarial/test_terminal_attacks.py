"""Attacks on the instructor's terminal and file system through the names and text a student
controls, through `python -m grader autograde`, `feedback`, `report`, `export` and `collect`,
in one batch.

A student names their submission folder (the student id), the files in it and their link
targets, the exchange folder they hand in (`collect`), and writes the notebook's text and what
its code prints. Attackers put terminal escapes in each (set the window title, erase lines,
print forged progress), a trailing newline after a classmate's id, a bidi override, bytes that
are not UTF-8, an id at the length limit and one past it, and a lone surrogate in a notebook.

What must hold: no command writes a control character (or anything not UTF-8) to stdout or
stderr, every line quoting student text shows it escaped; an id is checked whole and by length,
the longest valid one is graded and gets its feedback; a bad text in a submission is that
student's error row, never the grader's ("retry"); one student never stops the others. The
honest controls (z_control_*) are graded after the attackers.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pwd
import shutil

import pytest

from grader.course import COURSE_ID
from grader.intake import MAX_ID_LENGTH
from grader.nbgrader.release import publish
from grader.shown import shown
from tests.support.cli import on_course, output, terminal_problems

from .attacks import FULL, Attack, build

pytestmark = pytest.mark.slow

ASSIGNMENT = "soft_select"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
CONTROLS = {"z_control_1": "correct", "z_control_2": "wrong"}
LONGEST = "a06" + "x" * (MAX_ID_LENGTH - 3)  # the longest id the intake takes
# Folder names the intake must reject; each holds CORRECT answers (15 points, were it graded).
REJECTED = {
    "a01\x1b]0;pwned\x07\x1b[2K": "sets the window title, erases the line",
    "a02\r\x1b[2K  [5 of 5 100%] z_control_2  15 of 15 autograded": "forged progress",
    "a03\u202etxt.exe": "a bidi override",
    "a04\udcff\udcfe": "bytes that are not UTF-8 (decoded as lone surrogates)",
    "z_control_2\n": "a classmate's id and a trailing newline",
    "a07" + "x" * (MAX_ID_LENGTH - 2): "one character over the length limit",
    "a08" + "y" * 252: "255 bytes: the longest file name, past the limit",
}
TOO_LONG = [n for n in REJECTED if len(n) > MAX_ID_LENGTH]
SURROGATE = "a09_surrogate"
ODD_FILES = "a10_odd_file_names"
PRINTS = "a11_prints_escapes"
ESCAPES = "\\x1b]0;owned\\x07\\x1b[2J\\x1b[1A\\r\\u202e"  # as Python source text
PRINTING = f'''
import os, sys
for write in (sys.stdout.write, sys.stderr.write, sys.__stdout__.write, sys.__stderr__.write):
    write("{ESCAPES}\\n")
for fd in (1, 2):
    os.write(fd, "{ESCAPES}\\n".encode())
'''


def surrogate_notebook(released) -> tuple[bytes, int]:
    """The released notebook with a lone surrogate in its first code cell (JSON can write one:
    "\\ud800"), valid JSON and valid nbformat; and that cell's number (from 1)."""
    nb = json.loads(released.read_text())
    number, cell = next((i, c) for i, c in enumerate(nb["cells"], start=1)
                        if c["cell_type"] == "code")
    cell["source"] = ["# \ud800\n", *cell["source"]]
    return json.dumps(nb).encode(), number  # ensure_ascii: written as the escape \ud800


@pytest.fixture(scope="module")
def batch(own_class):
    mine = own_class("terminal", ASSIGNMENT)
    tmp, course, released, subs = mine.root, mine.course, mine.released, mine.submissions

    def student(name, answers="wrong", **kw):
        folder = mine.folder(name)
        build(Attack(name, "", answers=answers, **kw), released, folder)
        return folder

    for name in REJECTED:
        student(name, answers="correct")
    student(LONGEST, answers="correct")
    raw, surrogate_cell = surrogate_notebook(released)
    student(SURROGATE, raw=raw)
    odd = student(ODD_FILES, answers="correct",
                  files={"\x1b[31mred\x1b[0m.txt": "a file whose name colours the terminal"})
    (odd / "\x1b]0;link\x07").symlink_to("\x1b[2J/etc/passwd")
    os.mkfifo(odd / "\u202epipe")
    student(PRINTS, code=PRINTING)
    for name, answers in CONTROLS.items():
        student(name, answers=answers)

    runs = {"autograde": on_course(course.root, "autograde", ASSIGNMENT, "--submissions",
                                   str(subs), "--cell-timeout", "30", "--notebook-timeout",
                                   "120")}
    pages = tmp / "pages"
    runs["feedback"] = on_course(course.root, "feedback", ASSIGNMENT, "--to", str(pages))
    runs["report"] = on_course(course.root, "report", ASSIGNMENT, "--to",
                               str(tmp / "report.html"))
    runs["export"] = on_course(course.root, "export", "--to", str(tmp / "grades.csv"))
    collected = None
    if os.geteuid() == 0:  # handing folders to other users needs root
        collected = _collect(course, tmp, released)
        runs["collect"] = collected.pop("run")
    status_file = course.root / "status" / f"{ASSIGNMENT}.json"
    with course.gradebook() as gb:
        students = {s.id for s in gb.students}
        codes = {s.student.id: s.code_score for s in gb.assignment_submissions(ASSIGNMENT)}
    report = tmp / "report.html"
    return dict(course=course, runs=runs, students=students, codes=codes, pages=pages,
                status=json.loads(status_file.read_text()) if status_file.exists() else {},
                report=report.read_text() if report.exists() else "", collected=collected,
                surrogate_cell=surrogate_cell)


def _collect(course, tmp, released) -> dict:
    """`grader collect` from a shared exchange where two system accounts (daemon, bin) handed
    in folders named with terminal escapes: daemon's in its own name (collected), two of bin's
    in names that are not bin (refused)."""
    course = dataclasses.replace(course, shared_exchange=tmp / "exchange")
    publish(course, ASSIGNMENT)
    inbound = course.exchange / COURSE_ID / "inbound"
    names = {"daemon": f"daemon+{ASSIGNMENT}+\x1b]0;owned\x07\x1b[2K+x1",
             "refused_escape": f"\x1b[1Abin+{ASSIGNMENT}+2026+x2",
             "refused_newline": f"bin\n+{ASSIGNMENT}+2026+x3"}
    for key, name in names.items():
        owner = pwd.getpwnam("daemon" if key == "daemon" else "bin").pw_uid
        folder = inbound / name
        folder.mkdir()
        shutil.copy(released, folder / NOTEBOOK)
        (folder / "timestamp.txt").write_text("2026-01-01 00:00:00.000000 UTC")
        for path in (folder, *folder.iterdir()):
            os.chown(path, owner, owner)
    run = on_course(course.root, "collect", ASSIGNMENT, exchange=course.exchange)
    record = json.loads((course.root / "collected" / f"{ASSIGNMENT}.json").read_text())
    return {"run": run, "record": record, "names": names}


@pytest.mark.parametrize("command", ["autograde", "feedback", "report", "export", "collect"])
def test_no_control_character_reaches_the_terminal(batch, command):
    if command not in batch["runs"]:
        pytest.skip("collect needs root (folders handed to other users)")
    run = batch["runs"][command]
    # autograde: exit status 1, the batch ran to its end with error rows (the id past the
    # limit, the lone surrogate)
    assert run.returncode == (1 if command == "autograde" else 0), output(run)[-3000:]
    assert terminal_problems(run) == []


def test_every_rejected_folder_is_printed_escaped(batch):
    out = output(batch["runs"]["autograde"])
    for name in REJECTED:
        assert shown(name)[:60] in out, f"{REJECTED[name]}: no line shows it"


@pytest.mark.parametrize("name", sorted(REJECTED), ids=lambda n: shown(n)[:20])
def test_a_name_that_is_not_a_whole_valid_id_is_rejected(batch, name):
    row = batch["status"][shown(name)]
    assert row["error"] and "is not a valid student id" in row["error"], row
    assert shown(row["error"]) == row["error"], "the status holds the name escaped"
    assert name not in batch["students"], f"{REJECTED[name]}: became a gradebook student"
    if name in TOO_LONG:
        assert f"at most {MAX_ID_LENGTH} characters" in row["error"]


def test_the_trailing_newline_did_not_reach_the_classmate(batch):
    row = batch["status"]["z_control_2"]
    assert row["error"] is None and row["auto_score"] == 0, row
    assert batch["codes"]["z_control_2"] == 0
    assert "z_control_2\n" not in batch["codes"]


def test_controls_and_valid_attackers_are_graded(batch):
    assert batch["codes"] == {LONGEST: FULL, ODD_FILES: FULL, PRINTS: 0, "z_control_1": FULL,
                              "z_control_2": 0}, "no other submission in the gradebook"
    assert set(batch["students"]) == {LONGEST, SURROGATE, ODD_FILES, PRINTS, *CONTROLS}


def test_a_lone_surrogate_is_the_submissions_error_not_the_graders(batch):
    row = batch["status"][SURROGATE]
    assert row["error"] and f"cell {batch['surrogate_cell']} holds text that is not valid " \
        "Unicode" in row["error"], row
    assert "retry" not in row["error"]
    out = output(batch["runs"]["autograde"])
    assert "(0 of them by a failure of the grader, to retry)" in out, out[-2000:]


def test_odd_file_names_are_flagged_escaped(batch):
    details = [f["detail"] for f in batch["status"][ODD_FILES]["flags"]]
    assert any(d.startswith("\\x1b]0;link\\x07 is a symbolic link to \\x1b[2J/etc/passwd")
               for d in details), details
    assert any(d.startswith("\\u202epipe is a FIFO") for d in details), details
    assert all(shown(d) == d for d in details)


def test_every_graded_student_got_feedback(batch):
    """The longest id included: no file name made from an id passes the file-name limit."""
    graded = sorted(s for s, row in batch["status"].items() if row["error"] is None)
    assert LONGEST in graded
    assert sorted(p.name for p in batch["pages"].iterdir()) == [f"{s}.html" for s in graded]
    assert not [p for p in batch["pages"].iterdir() if p.name.startswith(".")], "temporaries"


def test_the_report_lists_the_rejected_folders_escaped(batch):
    for name in REJECTED:
        assert shown(name)[:40] in batch["report"], shown(name)


def test_collect_escapes_exchange_folder_names(batch):
    if batch["collected"] is None:
        pytest.skip("collect needs root (folders handed to other users)")
    record, names = batch["collected"]["record"], batch["collected"]["names"]
    out = output(batch["runs"]["collect"])
    assert record["students"]["daemon"]["folder"] == names["daemon"]
    assert shown(names["daemon"]) in out
    assert {r["folder"] for r in record["refused"]} == {names["refused_escape"],
                                                        names["refused_newline"]}
    for key in ("refused_escape", "refused_newline"):
        assert f"REFUSED {shown(names[key])}: it names" in out, out
