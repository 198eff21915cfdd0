"""Moodle: a CSV for "Import grades: CSV file" (Grades > Import > CSV file).

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
from pathlib import Path

from grader.lms import GradeTable, points, text_cell

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
