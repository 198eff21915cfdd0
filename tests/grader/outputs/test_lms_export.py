"""Grades exported for an LMS: Canvas's Gradebook import and Moodle's CSV grade import.

The formats followed:
- Canvas, "How do I import grades in the Gradebook?":
  https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807
  (leading columns Student, ID, SIS User ID, SIS Login ID, Section; a "Points Possible" row).
- Moodle, "Grade import" (CSV grade import, "Map from" / "Map to"):
  https://docs.moodle.org/en/Grade_import

The gradebook is built directly through nbgrader's API (no notebook is executed): three
students, two assignments, one late submission, one missing submission.
"""

import csv
from datetime import datetime
from functools import partial

import pytest

from grader.cli import main
from grader.course import Course
from grader.outputs.export import FORMATS, export
from tests.support.classes import add_assignment, add_submission, copy_of, new_gradebook
from tests.support.lms import CANVAS_COLUMNS
from tests.support.lms import canvas_gradebook as write_roster

ASSIGNMENTS = {"soft_select": [2, 3], "self_attention": [10]}  # grade cells' points
grade = partial(add_submission, timestamp="2026-01-01 12:00:00", late_penalty=0.0)


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Course:
    """Read-only for the tests (creating a gradebook costs seconds: nbgrader asks alembic)."""
    with new_gradebook(tmp_path_factory.mktemp("lms")) as (course, gb):
        for day, (name, cells) in enumerate(ASSIGNMENTS.items(), start=1):
            add_assignment(gb, name, cells, duedate=datetime(2026, 1, day))
        gb.add_student("alice", first_name="Alice", last_name="Liddell",
                       email="alice@example.org")
        gb.add_student("bob")  # neither name nor email known
        gb.add_student("carol", first_name="Carol", last_name="Danvers",
                       email="carol@example.org")
        grade(gb, "soft_select", "alice", [1.1, 2.2])  # 3.3000000000000003 in floats
        grade(gb, "self_attention", "alice", [10], late_penalty=2)
        grade(gb, "soft_select", "bob", [0, 0])
        grade(gb, "soft_select", "carol", [2, 1 / 3])
        # carol and bob never submitted self_attention
    return course


def read(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def by_first_column(rows, column):
    return {row[column]: row for row in rows}


def test_canvas_without_roster(course, tmp_path):
    rows = read(export(course, tmp_path / "canvas.csv", "canvas"))
    assert rows[0] == [*CANVAS_COLUMNS, "soft_select", "self_attention"]
    assert rows[1] == ["Points Possible", "", "", "", "", "5", "10"]
    students = by_first_column(rows[2:], 3)  # by SIS Login ID: the nbgrader id
    assert set(students) == {"alice", "bob", "carol"}
    # late penalty subtracted; no float noise; two decimals at most
    assert students["alice"] == ["Liddell, Alice", "", "", "alice", "", "3.3", "8"]
    assert students["carol"] == ["Danvers, Carol", "", "", "carol", "", "2.33", ""]
    # a 0 that nbgrader gave stays 0; a missing submission is an empty cell
    assert students["bob"] == ["bob", "", "", "bob", "", "0", ""]


def test_canvas_scores_are_nbgraders_own_export(course, tmp_path):
    ours = by_first_column(read(export(course, tmp_path / "canvas.csv", "canvas"))[2:], 3)
    header = read(tmp_path / "canvas.csv")[0]
    with open(export(course, tmp_path / "nbgrader.csv")) as f:
        nbgrader_rows = list(csv.DictReader(f))
    submitted = [r for r in nbgrader_rows if r["timestamp"]]
    assert len(submitted) == 4
    for row in submitted:
        cell = ours[row["student_id"]][header.index(row["assignment"])]
        assert float(cell) == round(float(row["score"]), 2)


def test_canvas_with_roster(course, tmp_path):
    roster = write_roster(tmp_path / "roster.csv", [
        ["Liddell, Alice", "101", "S0001", "alice", "Section A"],
        ["Doe, Bob", "102", "bob", "bob@uni.example", "Section B"],  # on SIS User ID
        ["Danvers, Carol", "103", "S0003", "carol", "Section A"],
        ["Dropped, Dave", "104", "S0004", "dave", "Section B"],  # nothing in nbgrader
    ])
    rows = read(export(course, tmp_path / "canvas.csv", "canvas", roster))
    assert rows[0] == [*CANVAS_COLUMNS, "soft_select", "self_attention"]
    assert rows[1][0] == "Points Possible"
    assert rows[2:] == [  # the roster's rows, in its order; its Test Student too, ungraded
        ["Liddell, Alice", "101", "S0001", "alice", "Section A", "3.3", "8"],
        ["Doe, Bob", "102", "bob", "bob@uni.example", "Section B", "0", ""],
        ["Danvers, Carol", "103", "S0003", "carol", "Section A", "2.33", ""],
        ["Dropped, Dave", "104", "S0004", "dave", "Section B", "", ""],
        ["Student, Test", "999", "", "", "Section A", "", ""],
    ]


def test_canvas_roster_missing_a_graded_student_is_an_error(course, tmp_path):
    roster = write_roster(tmp_path / "roster.csv", [
        ["Liddell, Alice", "101", "S0001", "alice", "Section A"],
        ["Danvers, Carol", "103", "S0003", "carol", "Section A"],
    ])
    with pytest.raises(ValueError, match=r"roster .*roster\.csv has no row .* bob \(") as e:
        export(course, tmp_path / "canvas.csv", "canvas", roster)
    assert "alice" not in str(e.value).split("student(s)")[1]
    assert not (tmp_path / "canvas.csv").exists(), "nothing written when a student is missing"


def test_canvas_roster_must_be_a_canvas_export(course, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,Section\nLiddell,101,S0001,A\n")
    with pytest.raises(ValueError, match=r"roster\.csv: no column SIS Login ID"):
        export(course, tmp_path / "canvas.csv", "canvas", roster)


def test_moodle(course, tmp_path):
    rows = read(export(course, tmp_path / "moodle.csv", "moodle"))
    assert rows[0] == ["Username", "Email address", "soft_select", "self_attention"]
    assert by_first_column(rows[1:], 0) == {
        "alice": ["alice", "alice@example.org", "3.3", "8"],
        "bob": ["bob", "", "0", ""],
        "carol": ["carol", "carol@example.org", "2.33", ""],
    }


def test_moodle_without_emails_maps_on_username_alone(course, tmp_path):
    copy = copy_of(course, tmp_path)
    with copy.gradebook() as gb:
        for student in gb.students:
            student.email = None
        gb.db.commit()
    rows = read(export(copy, tmp_path / "moodle.csv", "moodle"))
    assert rows[0] == ["Username", "soft_select", "self_attention"]
    assert sorted(rows[1:]) == [["alice", "3.3", "8"], ["bob", "0", ""], ["carol", "2.33", ""]]


def test_a_roster_is_for_canvas_only(course, tmp_path):
    with pytest.raises(ValueError, match="canvas"):
        export(course, tmp_path / "moodle.csv", "moodle", tmp_path / "roster.csv")


def test_cli_exports_for_canvas(course, tmp_path, capsys):
    to = tmp_path / "out" / "canvas.csv"
    assert main(["--course", str(course.root), "export", "--format", "canvas",
                 "--to", str(to)]) == 0
    assert str(to) in capsys.readouterr().out
    assert read(to)[0] == [*CANVAS_COLUMNS, "soft_select", "self_attention"]

    assert main(["--course", str(course.root), "export", "--format", "canvas", "--to", str(to),
                 "--roster", str(tmp_path / "no_roster.csv")]) == 2
    assert "no_roster.csv" in capsys.readouterr().err

    # the default is still nbgrader's own format
    assert main(["--course", str(course.root), "export", "--to", str(tmp_path / "g.csv")]) == 0
    assert read(tmp_path / "g.csv")[0][:4] == ["assignment", "duedate", "timestamp", "student_id"]


def test_cli_offers_every_format():
    from grader.cli import parser

    export_parser = parser()._subparsers._group_actions[0].choices["export"]
    formats = next(a for a in export_parser._actions if a.dest == "format")
    assert tuple(formats.choices) == FORMATS


def test_nbgrader_format_is_nbgraders_own_for_ordinary_data(course, tmp_path):
    """Existing users' imports keep working: without a character that needs quoting, the file
    is byte for byte the one nbgrader's CsvExportPlugin writes."""
    from nbgrader.plugins import CsvExportPlugin

    ours = export(course, tmp_path / "ours.csv").read_bytes()
    with course.gradebook() as gb:
        CsvExportPlugin(to=str(tmp_path / "theirs.csv")).export(gb)
    assert ours == (tmp_path / "theirs.csv").read_bytes()


@pytest.mark.parametrize(("value", "cell"), [
    ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"), ("+1", "'+1"), ("-2+3", "'-2+3"),
    ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"), ("\rx", "'\rx"), ("\nx", "'\nx"),
    ("alice", "alice"), ("O'Brien", "O'Brien"), ("a=b", "a=b"), ("", ""), (None, "")])
def test_text_cells_never_start_like_a_formula(value, cell):
    from grader.lms import text_cell

    assert text_cell(value) == cell
