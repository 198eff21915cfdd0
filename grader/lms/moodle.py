"""Moodle: a CSV for "Import grades: CSV file" (Grades > Import > CSV file); and the names in the
archive of an assignment's "Download all submissions" (`archive_member`, `people`:
grader.lms.archive).

Documented in Moodle's "Grade import" page (https://docs.moodle.org/en/Grade_import): a
header row, then one row per user. On the import's preview the instructor picks the column
that identifies users ("Map from") and the user field it holds ("Map to": userid, username,
useridnumber or useremail), then the grade item each other column goes to (or a new one).
Hence: `Username` (the nbgrader id, the hub's login), `Email address` when the gradebook has
emails, and one column per assignment with the numeric grade.

Moodle's importer (grade/import/csv/classes/load_data.php) reads an empty cell as "no grade",
and stops the whole import at the first row whose user it cannot find: map on Username when
some student has no email in the gradebook.

Usernames, emails and assignment names are written through grader.lms.text_cell (no cell starts
like a formula); the intake's student ids never start with a formula character, so Username
still matches. An email that does ("-x@uni.example") is written "'-x@uni.example", and would
not match: map on Username.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from grader.lms import GradeTable, points, text_cell
from grader.lms.archive import Named, Person, student_id_problem

USERNAME = "Username"
EMAIL = "Email address"


def write(table: GradeTable, to: Path) -> Path:
    with_email = any(s.email for s in table.students)
    names = [a.name for a in table.assignments]
    with open(to, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow([USERNAME, *([EMAIL] if with_email else []), *map(text_cell, names)])
        for student in table.students:
            out.writerow([text_cell(student.id),
                          *([text_cell(student.email)] if with_email else []),
                          *(points(student.scores.get(name)) for name in names)])
    return to


# ----- the archive of Download all submissions -------------------------------------------------
#
# Moodle, mod/assign (classes/downloader.php, get_student_prefix; before 4.1 locallib.php,
# download_submissions): one folder per student and submission plugin,
#     {full name, "_" made " "}_{participant number}_assignsubmission_file/{the student's files}
# (Moodle 3.1 to 4.0 end the folder's name with one more "_"; before 3.1, or with "Download
# submissions in folders" off, the zip is flat: {...}_assignsubmission_file_{file}). The
# participant number is the assignment's own (get_uniqueid_for_user: another assignment gives
# the same student another one); the grading worksheet of the same assignment maps it, in its
# Identifier column ("Participant 123456"). The archive says nothing of when: the worksheet's
# "Last modified (submission)" is kept as Moodle wrote it. Group (team) submissions are named
# by the group, not by a participant, and cannot be taken in this way.

LMS = "Moodle"
NUMBER = "participant number"
RENAMES_COPIES = False
ROSTER = ("the assignment's grading worksheet, downloaded from Moodle (the assignment's "
          "Submissions page > Actions > Download grading worksheet; the assignment's Feedback "
          "types must include \"Offline grading worksheet\")")

IDENTIFIER, FULL_NAME, SUBMITTED = "Identifier", "Full name", "Last modified (submission)"
# Where the student id is, the first cell of these that is not empty: a login (Username, when
# the site shows it), else the institution's ID number, else the whole email address (never
# its part before the @, which two students of two domains can share). `export --format
# moodle` writes that id in its Username column: map it to the same field on import.
ID_COLUMNS = ("Username", "ID number", "Email address")

_FOLDER = re.compile(r"(?P<name>[^_/]*)_(?P<number>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?")
_FLAT = re.compile(r"(?P<name>[^_/]*)_(?P<number>\d+)_assignsubmission_(?P<plugin>[a-z]+)_"
                   r"(?P<file>[^/]+)")


def archive_member(name: str) -> Named | str:
    """What Moodle's name of an archive member says, or why it is no name Moodle gives."""
    top, _, rest = name.partition("/")
    m = _FOLDER.fullmatch(top) if rest else _FLAT.fullmatch(name)
    if not m:
        return ("is not named as Moodle names the files of Download all submissions "
                "(FULL NAME_NUMBER_assignsubmission_file/FILE): not from Moodle's archive")
    path = tuple(rest.split("/")) if rest else (m["file"],)
    leave_out = None
    if m["plugin"] != "file":
        leave_out = f"is not an uploaded file (Moodle's assignsubmission_{m['plugin']})"
    return Named(m["number"], path, m["name"], leave_out=leave_out)


def people(worksheet: Path) -> list[Person]:
    """The students of an assignment's grading worksheet: the participant number of its
    Identifier, and the student id from ID_COLUMNS."""
    with open(worksheet, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        header = [h.strip() for h in reader.fieldnames or []]
        reader.fieldnames = header
        columns = [c for c in ID_COLUMNS if c in header]
        missing = [c for c in (IDENTIFIER, FULL_NAME) if c not in header]
        if missing or not columns:
            raise ValueError(
                f"roster {worksheet}: no column {', '.join(missing or ID_COLUMNS)} (found: "
                f"{', '.join(header) or 'none'}); download {ROSTER}, in English")
        found = []
        for line, row in enumerate(reader, start=2):
            cells = {k: (v or "").strip() for k, v in row.items() if isinstance(k, str)}
            number = re.fullmatch(r"\D*?(\d+)", cells.get(IDENTIFIER, ""))
            if not number:
                raise ValueError(f"roster {worksheet}, line {line}: its Identifier "
                                 f"{cells.get(IDENTIFIER, '')!r} is not 'Participant NUMBER'; "
                                 f"download {ROSTER}")
            column = next((c for c in columns if cells.get(c)), columns[0])
            submitted = cells.get(SUBMITTED, "")
            found.append(Person(number[1], cells.get(column, ""),
                                cells.get(FULL_NAME) or f"Participant {number[1]}",
                                student_id_problem(column, cells.get(column, "")),
                                submitted if submitted not in ("", "-") else None))
    return found


def other_person(named: Named, person: Person) -> str | None:
    """A participant number is one assignment's: a worksheet of another assignment would give
    files to the wrong students. The full name in the folder's name must be the worksheet's
    (letters and digits compared; "Participant" under blind marking names nobody)."""
    def letters(text: str) -> str:
        return "".join(ch for ch in text if ch.isalnum()).casefold()

    if letters(named.name) in (letters(person.name), "participant"):
        return None
    return (f"is in the folder of {named.name!r}, but participant {named.lms_id} of the "
            f"worksheet is {person.name!r}: is the worksheet of another assignment? Download "
            "the grading worksheet of this assignment")
