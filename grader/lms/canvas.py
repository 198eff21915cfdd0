"""Canvas: a CSV for the Gradebook's import (Grades > Import); and the names in the archive of
an assignment's "Download Submissions" (`archive_member`, `people`: grader.lms.archive).

The format is the one Canvas exports and documents in "How do I import grades in the
Gradebook?" (https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807):
the columns Student, ID, SIS User ID, SIS Login ID, Section, then one column per assignment
(a title that matches no Canvas assignment creates one), and under the header a row whose
Student cell is "Points Possible", giving each assignment's maximum. Canvas's importer
(GradebookImporter in canvas-lms) finds each row's student by ID, then SIS User ID, then SIS
Login ID, then the name.

Every text cell is written through grader.lms.text_cell: a roster's names and ids come from
Canvas and are no more trusted than a student's own. A roster cell that starts like a formula
(a name "=HYPERLINK(...)", say) is written with a quote in front; Canvas still finds the row by
its ID, the number Canvas gave the student, which is never changed (digits only).
"""

from __future__ import annotations

import csv
import logging
import re
from pathlib import Path

from grader.lms import GradeTable, StudentGrades, points, text_cell
from grader.lms.archive import Named, Person, student_id_problem

log = logging.getLogger(__name__)

STUDENT_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POINTS_POSSIBLE = "Points Possible"
# Where in a roster row the nbgrader id (the hub's login) may be, most likely first.
MATCH_ON = ("SIS Login ID", "SIS User ID", "ID")

RosterRow = dict[str, str]


def write(table: GradeTable, to: Path, roster: Path | None = None) -> Path:
    """Write `table` for Canvas; with `roster` (Canvas's own gradebook export), one row per
    student of that roster, identified as Canvas knows them."""
    rows = _roster_rows(table, roster) if roster else [_own_row(s) for s in table.students]
    names = [a.name for a in table.assignments]
    with open(to, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow([*STUDENT_COLUMNS, *map(text_cell, names)])
        out.writerow([POINTS_POSSIBLE, "", "", "", "", *(points(a.max_score)
                                                         for a in table.assignments)])
        for who, student in rows:
            scores = student.scores if student else {}
            out.writerow([*(text_cell(who[c]) for c in STUDENT_COLUMNS),
                          *(points(scores.get(name)) for name in names)])
    return to


def read_roster(path: Path) -> list[RosterRow]:
    """The students of a gradebook CSV exported from Canvas: its five identifying columns."""
    with open(path, newline="", encoding="utf-8-sig") as f:  # Excel's byte-order mark
        reader = csv.DictReader(f)
        reader.fieldnames = [h.strip() for h in reader.fieldnames or []]
        missing = [c for c in STUDENT_COLUMNS if c not in reader.fieldnames]
        if missing:
            raise ValueError(f"roster {path}: no column {', '.join(missing)}; export the "
                             f"roster from Canvas's gradebook (Export > Export Entire Gradebook)")
        rows = [{c: (row.get(c) or "").strip() for c in STUDENT_COLUMNS} for row in reader]
    return [r for r in rows if _is_student(r)]


def _is_student(row: RosterRow) -> bool:
    # Canvas's export also has a Points Possible row (and may have a posting-policy row):
    # neither names anyone.
    return POINTS_POSSIBLE not in row["Student"] and any(row[c] for c in MATCH_ON)


def _own_row(student: StudentGrades) -> tuple[RosterRow, StudentGrades]:
    """Without a roster: Canvas finds the student by SIS Login ID, the hub's login."""
    if student.last_name and student.first_name:
        name = f"{student.last_name}, {student.first_name}"
    else:
        name = student.last_name or student.first_name or student.id
    return {"Student": name, "ID": "", "SIS User ID": "", "SIS Login ID": student.id,
            "Section": ""}, student


def _roster_rows(table: GradeTable, roster: Path
                 ) -> list[tuple[RosterRow, StudentGrades | None]]:
    """Every roster row with the gradebook student it names (None: nothing graded)."""
    entries = read_roster(roster)
    found: dict[int, StudentGrades] = {}
    unknown = []
    for student in table.students:
        index = _find(entries, student.id)
        if index is None:
            unknown.append(student.id)
        elif index in found:
            raise ValueError(f"roster {roster}: {found[index].id!r} and {student.id!r} both "
                             f"match the row of {entries[index]['Student']!r}")
        else:
            found[index] = student
    if unknown:
        raise ValueError(f"roster {roster} has no row for the graded student(s) "
                         f"{', '.join(unknown)} (looked for each id in {', '.join(MATCH_ON)}); "
                         f"their grades would be lost. Export the roster again from Canvas, or "
                         f"find these students there")
    log.info("roster %s: %d students, %d of them graded", roster, len(entries), len(found))
    return [(entry, found.get(i)) for i, entry in enumerate(entries)]


def _find(entries: list[RosterRow], student_id: str) -> int | None:
    for column in MATCH_ON:
        for i, entry in enumerate(entries):
            if entry[column] == student_id:
                return i
    return None


# ----- the archive of Download Submissions -----------------------------------------------------
#
# canvas-lms, app/models/content_zipper.rb (add_submission, get_filename): each uploaded file of a
# student's latest submission is one member of a flat zip, named
#     {sortable name}_{LATE_ when late}{user ID}_{file ID}_{the file's name}
# where the first three are joined by "_" and kept to word characters, lowercased ("Liddell,
# Alice" -> liddellalice, LATE -> late); the file ID grows with each upload. A text entry is
# {prefix}_text.html, a website URL {prefix}_link.html. A file uploaded again under a name the
# student's earlier upload has is renamed FILE-1.ipynb, FILE-2.ipynb (grader.lms.archive keeps
# the highest). The archive says when only as LATE (past the due date, by Canvas's own rule):
# no time. With anonymous grading the names carry no user ID that a roster has.

LMS = "Canvas"
NUMBER = "user ID"
RENAMES_COPIES = True
ROSTER = ("the gradebook, downloaded from Canvas (Grades > Export > Export Entire Gradebook): "
          "its ID column is the user ID in the archive's names")

_PREFIX = r"(?:(?P<name>\w*?)_)?(?P<late>(?i:late)_)?(?P<user>\d+)"
UPLOAD = re.compile(_PREFIX + r"_(?P<file>\d+)_(?P<file_name>[^/]+)")
ENTRY = re.compile(_PREFIX + r"_(?P<kind>text|link)\.html")


def archive_member(name: str) -> Named | str:
    """What Canvas's name of an archive member says, or why it is no name Canvas gives."""
    if m := UPLOAD.fullmatch(name):
        return Named(m["user"], (m["file_name"],), m["name"] or "", bool(m["late"]),
                     int(m["file"]))
    if m := ENTRY.fullmatch(name):
        what = "a text entry" if m["kind"] == "text" else "a website URL"
        return Named(m["user"], (f"{m['kind']}.html",), m["name"] or "", bool(m["late"]),
                     leave_out=f"is {what} submitted on Canvas, not an uploaded notebook")
    return ("is not named as Canvas names the files of Download Submissions "
            "(name_[late_]USERID_FILEID_FILE): not from Canvas's archive")


def people(roster: Path) -> list[Person]:
    """The students of Canvas's gradebook export: Canvas's user ID (the ID column), and as the
    student id the first cell of MATCH_ON that is not empty: the one `export --roster` finds
    them by (SIS Login ID, the login, first)."""
    found = []
    for row in read_roster(roster):
        if not row["ID"]:
            continue  # no user ID: no file of the archive can be theirs
        column = next(c for c in MATCH_ON if row[c])
        found.append(Person(row["ID"], row[column], row["Student"] or row[column],
                            student_id_problem(column, row[column])))
    if not found:
        raise ValueError(f"roster {roster} has no student with an ID (Canvas's user ID); "
                         f"download {ROSTER}")
    return found


def other_person(named: Named, person: Person) -> str | None:
    """Canvas's user IDs are Canvas's, the same in every course and export: the ID decides
    (a name in the roster may have changed since)."""
    return None
