"""A class roster into the gradebook: the students' names and emails, which autograde never
knows (it creates each student from a submission folder's name alone), so that every export
has them.

Three shapes of roster are read:

- nbgrader's own (`nbgrader db student import`): the columns `id`, `first_name`, `last_name`,
  `email` and `lms_user_id` (the gradebook's own), each but `id` optional. As nbgrader does, a
  column the file lacks leaves that field of every student alone, and an empty cell empties it.
- Canvas's gradebook export (Grades > Export > Export Entire Gradebook): the student is the
  `SIS Login ID` (the hub's login, where the export matches grades back,
  grader/lms/canvas.py), else the `SIS User ID`; the name is `Student`, "Last, First". Canvas's
  Points Possible row and its Test Student (no SIS id) are not students.
- Moodle's participants download, grade export or assignment grading worksheet: the student is
  `Username` (where grader/lms/moodle.py's export is matched); `First name`, `Last name` (older
  Moodles: `Surname`) and `Email address`. A worksheet with only `Full name` stores it whole as
  the first name: names do not split into first and last reliably.

A roster is read whole before anything is written: a row that cannot be imported (an id that is
not a valid student id, a control character in a name, two rows for one student) is rejected by
its row number, the header being row 1, as a spreadsheet numbers it, and never stops the others.
Names are stored as the roster gives them (every sink escapes them: grader.lms.text_cell in the
exports, grader.shown.shown on the terminal, the pages' autoescaping), but for control and
bidirectional-override characters, which no name needs and which only serve to disguise text.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from grader.course import Course
from grader.intake import id_problem
from grader.lms import canvas, moodle
from grader.nbgrader.config import setup_process

FORMATS = ("auto", "nbgrader", "canvas", "moodle")
# The gradebook's Student columns a roster may fill (nbgrader's Student table, but its id).
FIELDS = ("first_name", "last_name", "email", "lms_user_id")
MAX_LENGTH = 128  # nbgrader keeps each of them as String(128) (enforced by PostgreSQL)

NBGRADER_ID = "id"
CANVAS_NAME = "Student"
CANVAS_IDS = ("SIS Login ID", "SIS User ID")  # the hub's login, most likely first
CANVAS_TEST_STUDENT = "Student, Test"
MOODLE_FIRST = "First name"
MOODLE_LAST = ("Last name", "Surname")
MOODLE_FULL = "Full name"

# Characters no name or email needs, refused in every cell: C0 and C1 controls (escape sequences,
# line breaks, tabs), line and paragraph separators, lone surrogates, and the bidirectional
# embeddings, overrides and isolates that turn the text after them around. Joiners (ZWJ, ZWNJ,
# needed in some scripts) are kept.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_REFUSED_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
DELIMITERS = ",;\t"  # Moodle's export lets its user pick; Excel in many locales writes ';'


@dataclass(frozen=True)
class Entry:
    """One roster row: a student and the gradebook fields the roster gives for them."""

    row: int
    id: str
    fields: dict[str, str | None]


@dataclass
class Roster:
    format: str
    entries: list[Entry] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (row, why)
    ids: set[str] = field(default_factory=set)  # every valid id on it, rejected rows' too


@dataclass
class Outcome:
    """What an import did, row by row, and each rejected row with its reason."""

    format: str
    added: list[Entry] = field(default_factory=list)
    updated: list[Entry] = field(default_factory=list)
    unchanged: list[Entry] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)
    not_on_roster: list[str] = field(default_factory=list)


class RowProblem(ValueError):
    """This row cannot be imported (the message says why, and what to do); `student`: its
    valid id, when the row has one (that student is on the roster all the same)."""

    def __init__(self, message: str, student: str | None = None):
        super().__init__(message)
        self.student = student


# ----- reading --------------------------------------------------------------------------------

def read(path: Path, format: str = "auto") -> Roster:
    """The roster at `path`, every row either an Entry or a rejection; duplicates rejected."""
    if format not in FORMATS:
        raise ValueError(f"no roster format {format!r}: one of {', '.join(FORMATS)}")
    header, rows = _table(path)
    format = detect(header, path) if format == "auto" else format
    _check_columns(header, format, path)
    roster = Roster(format)
    for number, row in rows:
        try:
            entry = _ENTRY[format](number, row, header)
        except RowProblem as e:
            roster.rejected.append((number, str(e)))
            if e.student:
                roster.ids.add(e.student)
            continue
        if entry is not None:
            roster.entries.append(entry)
            roster.ids.add(entry.id)
    _refuse_duplicates(roster)
    if not roster.entries and not roster.rejected:
        raise ValueError(f"roster {path} has no students: only a header")
    return roster


def _table(path: Path) -> tuple[list[str], Iterator[tuple[int, dict[str, str]]]]:
    """The header (stripped) and the rows with their numbers (header: row 1; a cell holding a
    line break does not make a new row, as in a spreadsheet)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # Excel's byte-order mark
    except UnicodeDecodeError as e:
        raise ValueError(f"roster {path} is not UTF-8 text ({e.reason} at byte {e.start}): "
                         "save it as \"CSV UTF-8\" and import it again") from None
    first_line = text.split("\n", 1)[0]
    delimiter = max(DELIMITERS, key=first_line.count)  # ties: the comma
    # Lines end at \n, \r or \r\n only, as the csv module wants them (newline="").
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise ValueError(f"roster {path} is empty") from None
    except csv.Error as e:
        raise _not_csv(path, 1, e) from None

    def rows():
        number = 1
        try:
            for cells in reader:
                number += 1
                if not any(c.strip() for c in cells):
                    continue  # a blank line, or a spreadsheet's empty row
                yield number, {h: (cells[i] if i < len(cells) else "")
                               for i, h in enumerate(header)}
        except csv.Error as e:
            raise _not_csv(path, number + 1, e) from None

    return header, rows()


def _not_csv(path: Path, row: int, e: csv.Error) -> ValueError:
    return ValueError(f"roster {path}, row {row}: not CSV as a spreadsheet writes it ({e}): "
                      "open it in a spreadsheet and save it as CSV again")


def detect(header: list[str], path: Path) -> str:
    """Which roster `header` is the header of."""
    if NBGRADER_ID in header:
        return "nbgrader"
    if CANVAS_NAME in header and any(c in header for c in CANVAS_IDS):
        return "canvas"
    if moodle.USERNAME in header or any(c in header for c in (
            MOODLE_FIRST, *MOODLE_LAST, MOODLE_FULL, moodle.EMAIL)):
        return "moodle"
    raise ValueError(
        f"roster {path}: not a roster this command reads (its columns: "
        f"{', '.join(map(repr, header[:8]))}{', ...' if len(header) > 8 else ''}). It reads "
        f"nbgrader's (columns {NBGRADER_ID}, first_name, last_name, email), Canvas's gradebook "
        f"export (Student, SIS Login ID) and Moodle's (Username, First name, Last name, Email "
        f"address); --format names one")


def _check_columns(header: list[str], format: str, path: Path) -> None:
    required = {"nbgrader": [NBGRADER_ID], "canvas": [CANVAS_NAME, *CANVAS_IDS],
                "moodle": [moodle.USERNAME]}[format]
    missing = [c for c in required if c not in header]
    if missing:
        hint = {"nbgrader": "nbgrader's roster has a column `id` with each student's id",
                "canvas": "export it from Canvas's gradebook (Export > Export Entire Gradebook)",
                "moodle": "add Username to the export (Site administration > Users > "
                          "Permissions > User policies > Show user identity), or write "
                          "nbgrader's roster"}[format]
        raise ValueError(f"roster {path} ({format} format): no column "
                         f"{', '.join(missing)}; {hint}")


def _student(value: str, column: str) -> str:
    """The student id in `column`, as the intake checks folder names."""
    value = value.strip(" ")
    if not value:
        raise RowProblem(f"no student id in {column}")
    problem = id_problem(value)
    if problem:
        raise RowProblem(f"{column} {problem}")
    return value


def _text(value: str, name: str, student: str) -> str | None:
    """A name or email as given (but the spaces around it); empty is None, as nbgrader imports
    an empty cell. A control character or an overlong value is the row's problem."""
    value = value.strip(" ")
    if not value:
        return None
    bad = next((ch for ch in value if ch in _BIDI_CONTROLS
                or unicodedata.category(ch) in _REFUSED_CATEGORIES), None)
    if bad is not None:
        raise RowProblem(f"the {name} of {student!r}, {value!r}, has a control character "
                         f"({bad!r}): fix the cell", student)
    if len(value) > MAX_LENGTH:
        raise RowProblem(f"the {name} of {student!r} has {len(value)} characters: the gradebook "
                         f"keeps at most {MAX_LENGTH}", student)
    if name == "email" and not EMAIL.fullmatch(value):
        raise RowProblem(f"the email of {student!r}, {value!r}, is not an email address",
                         student)
    return value


def _nbgrader_entry(number: int, row: dict, header: list[str]) -> Entry:
    student = _student(row[NBGRADER_ID], NBGRADER_ID)
    fields = {f: _text(row[f], f.replace("_", " "), student) for f in FIELDS if f in header}
    return Entry(number, student, fields)


def _canvas_entry(number: int, row: dict, header: list[str]) -> Entry | None:
    name = row[CANVAS_NAME].strip(" ")
    logins = [row[c].strip(" ") for c in CANVAS_IDS]
    if canvas.POINTS_POSSIBLE in name or (name == CANVAS_TEST_STUDENT and not any(logins)):
        return None  # Canvas's Points Possible row and its Test Student
    column = next((c for c, v in zip(CANVAS_IDS, logins, strict=True) if v), None)
    if column is None:
        raise RowProblem(f"no {' or '.join(CANVAS_IDS)} for {name!r}: the student's login on "
                         "the hub is not on this roster")
    student = _student(row[column], column)
    last, comma, first = name.partition(",")
    fields = {"last_name": _text(last, "last name", student),
              "first_name": _text(first, "first name", student) if comma else None}
    return Entry(number, student, fields)


def _moodle_entry(number: int, row: dict, header: list[str]) -> Entry:
    student = _student(row[moodle.USERNAME], moodle.USERNAME)
    fields: dict[str, str | None] = {}
    last = next((c for c in MOODLE_LAST if c in header), None)
    if MOODLE_FIRST in header:
        fields["first_name"] = _text(row[MOODLE_FIRST], "first name", student)
    elif MOODLE_FULL in header:
        fields["first_name"] = _text(row[MOODLE_FULL], "name", student)
    if last:
        fields["last_name"] = _text(row[last], "last name", student)
    if moodle.EMAIL in header:
        fields["email"] = _text(row[moodle.EMAIL], "email", student)
    return Entry(number, student, fields)


_ENTRY = {"nbgrader": _nbgrader_entry, "canvas": _canvas_entry, "moodle": _moodle_entry}


def _refuse_duplicates(roster: Roster) -> None:
    """Two rows for one student: which is right is not known, so neither is imported."""
    rows: dict[str, list[int]] = {}
    for entry in roster.entries:
        rows.setdefault(entry.id, []).append(entry.row)
    twice = {student: numbers for student, numbers in rows.items() if len(numbers) > 1}
    for student, numbers in twice.items():
        for number in numbers:
            others = ", ".join(str(n) for n in numbers if n != number)
            roster.rejected.append((number, f"student {student!r} is also on row {others}: "
                                            "neither row is imported; keep one of them"))
    roster.entries = [e for e in roster.entries if e.id not in twice]
    roster.rejected.sort()


# ----- writing --------------------------------------------------------------------------------

def import_roster(course: Course, path: Path, format: str = "auto") -> Outcome:
    """Create or update the gradebook's students from the roster at `path`
    (nbgrader's Gradebook.update_or_create_student, as `nbgrader db student import`)."""
    from nbgrader.api import InvalidEntry

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no roster file {path}")
    roster = read(path, format)
    setup_process()
    if course.db is None:
        course.root.mkdir(parents=True, exist_ok=True)
    outcome = Outcome(roster.format, rejected=list(roster.rejected))
    with course.gradebook() as gb:
        known = {s.id: s for s in gb.students}
        for entry in roster.entries:
            before = known.get(entry.id)
            if before is not None and all(getattr(before, f) == v
                                          for f, v in entry.fields.items()):
                outcome.unchanged.append(entry)
                continue
            try:
                gb.update_or_create_student(entry.id, **entry.fields)
            except InvalidEntry as e:
                gb.db.rollback()
                outcome.rejected.append((entry.row, f"the gradebook refused {entry.id!r}: {e}"))
                continue
            (outcome.added if before is None else outcome.updated).append(entry)
        outcome.not_on_roster = sorted(set(known) - roster.ids)
    outcome.rejected.sort()
    return outcome


def described(fields: dict[str, str | None]) -> str:
    """What a roster row gives for a student, as one line shows it ("Last, First <email>");
    escape it with grader.shown.shown before printing."""
    name = ", ".join(n for n in (fields.get("last_name"), fields.get("first_name")) if n)
    email = fields.get("email")
    return " ".join(p for p in (name, f"<{email}>" if email else "") if p)
