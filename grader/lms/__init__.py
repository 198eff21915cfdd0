"""Grades for a learning management system: the table every LMS writer reads.

grader/export.py reads the gradebook once into a `GradeTable`; each module here (canvas,
moodle) turns that table into the CSV its LMS imports. Nothing in this package touches nbgrader.
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


def points(score: float | None) -> str:
    """A score as an LMS cell: at most two decimals, no float noise (3.3, not 3.3000000000000003).

    No submission is an empty cell, never 0: Canvas and Moodle both read an empty cell as "no
    grade", so a student who has not submitted is not given a zero that nobody awarded.
    """
    if score is None:
        return ""
    return f"{score:.2f}".rstrip("0").rstrip(".")
