"""Grades for a learning management system: the table every LMS writer reads.

grader/outputs/export.py reads the gradebook once into a `GradeTable`; each module here (canvas,
moodle) turns that table into the CSV its LMS imports. Nothing in this package touches nbgrader.

Every CSV here is written with the csv module (a comma, quote or line break inside a cell stays
inside it), and every text cell goes through `text_cell`: names, emails and ids come from
students and from the LMS's roster, and a spreadsheet opening the file would run a cell that
starts like a formula. Score cells (`points`) are numbers and stay numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Assignment:
    name: str
    max_score: float


@dataclass(frozen=True)
class StudentGrades:
    """One student's total score per assignment; an assignment they did not submit is absent."""

    id: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    scores: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class GradeTable:
    assignments: tuple[Assignment, ...]
    students: tuple[StudentGrades, ...]


# OWASP, "CSV Injection": a cell starting with one of these is read as a formula by Excel,
# LibreOffice or Google Sheets (LF added: some read a cell's first line on its own).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


def text_cell(value: object) -> str:
    """A text cell as a spreadsheet cannot run it: one that starts like a formula gets a single
    quote in front, as OWASP recommends ("=1+1" is written "'=1+1"). None is empty.

    An importer that matches on the cell (Canvas on SIS Login ID, Moodle on Username) no longer
    finds such a value: the intake's student ids never start with one of these characters
    (grader.intake.STUDENT_ID), so only names, emails and roster cells can be changed."""
    if value is None:
        return ""
    value = str(value)
    return f"'{value}" if value.startswith(FORMULA_START) else value


def points(score: float | None) -> str:
    """A score as an LMS cell: at most two decimals, no float noise (3.3, not 3.3000000000000003).

    No submission is an empty cell, never 0: Canvas and Moodle both read an empty cell as "no
    grade", so a student who has not submitted is not given a zero that nobody awarded.
    """
    if score is None:
        return ""
    return f"{score:.2f}".rstrip("0").rstrip(".")
