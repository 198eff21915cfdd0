"""Grades to CSV: nbgrader's own format, or one that Canvas or Moodle imports (grader/lms).

Every format is written with the csv module, and no text cell starts like a formula
(grader.lms.text_cell): ids, names and emails reach a spreadsheet. nbgrader's own
CsvExportPlugin joins the cells with commas, unquoted: an id or a name holding a comma or a line
break would move the cells after it or add rows of its own. `NbgraderCsv` writes its columns and
values (those `nbgrader export` writes) through the csv module instead.
"""

from __future__ import annotations

import csv
import logging
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.plugins import CsvExportPlugin

from grader.course import Course
from grader.lms import Assignment, GradeTable, StudentGrades, canvas, moodle, text_cell
from grader.nbgrader import gradebook as gradebook_lookups
from grader.nbgrader.config import setup_process

log = logging.getLogger(__name__)

FORMATS = ("nbgrader", "canvas", "moodle")


def export(course: Course, to: Path, format: str = "nbgrader",
           roster: Path | None = None) -> Path:
    """Write the gradebook's grades to `to`; `roster` (Canvas only) is Canvas's own export."""
    if format not in FORMATS:
        raise ValueError(f"no export format {format!r}: one of {', '.join(FORMATS)}")
    if roster is not None and format != "canvas":
        raise ValueError("a roster is for --format canvas (a gradebook exported from Canvas)")
    setup_process()
    if not course.has_gradebook:
        raise FileNotFoundError(f"no gradebook in {course.root}: autograde something first")
    to = Path(to)
    to.parent.mkdir(parents=True, exist_ok=True)
    with course.gradebook() as gb:
        if format == "nbgrader":
            NbgraderCsv(to=str(to)).export(gb)
            return to
        table = grade_table(gb)
    log.info("%d students, %d assignments to %s", len(table.students), len(table.assignments),
             format)
    if format == "canvas":
        return canvas.write(table, to, roster)
    return moodle.write(table, to)


def grade_table(gb: Gradebook) -> GradeTable:
    """Every student's total per assignment, read once from the gradebook."""
    assignments = tuple(Assignment(a.name, float(a.max_score)) for a in gb.assignments)
    scores: dict[str, dict[str, float]] = {}
    for assignment in assignments:
        for sub in gb.assignment_submissions(assignment.name):
            # As nbgrader's own export: the score less the late penalty, never below zero
            # (the gradebook's `score` is before the penalty).
            total = max(0.0, sub.score - sub.late_submission_penalty)
            scores.setdefault(sub.student_id, {})[assignment.name] = total
    students = tuple(StudentGrades(s.id, s.first_name or "", s.last_name or "", s.email or "",
                                   scores.get(s.id, {})) for s in gb.students)
    return GradeTable(assignments, students)


class NbgraderCsv(CsvExportPlugin):
    """nbgrader's CSV export (same columns, same values, one row per assignment and student),
    written by the csv module: a cell holding a comma, quote or line break is quoted, and a
    text cell that starts like a formula gets a quote in front (grader.lms.text_cell).
    Also usable as nbgrader's own plugin (`nbgrader export --exporter
    grader.outputs.export.NbgraderCsv`)."""

    COLUMNS = ("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name",
               "email", "raw_score", "late_submission_penalty", "score", "max_score")
    TEXT = frozenset(COLUMNS[:7])  # the others are numbers, written as nbgrader writes them

    def export(self, gradebook: Gradebook) -> None:
        dest = self.to or "grades.csv"
        students = {str(s) for s in self.student}
        assignments = {str(a) for a in self.assignment}
        self.log.info("Exporting grades to %s", dest)
        with open(dest, "w", newline="", encoding="utf-8") as f:
            out = csv.writer(f, lineterminator="\n")  # nbgrader's line ends
            out.writerow(self.COLUMNS)
            for assignment in gradebook.assignments:
                if assignments and assignment.name not in assignments:
                    continue
                for student in gradebook.students:
                    if students and student.id not in students:
                        continue
                    row = self.row(gradebook, assignment, student)
                    out.writerow([text_cell(row[c]) if c in self.TEXT else _cell(row[c])
                                  for c in self.COLUMNS])

    @staticmethod
    def row(gradebook: Gradebook, assignment, student) -> dict:
        """One student's row for one assignment, as nbgrader's CsvExportPlugin computes it: no
        submission is a score of zero with an empty timestamp."""
        row = {"assignment": assignment.name, "duedate": assignment.duedate,
               "student_id": student.id, "last_name": student.last_name,
               "first_name": student.first_name, "email": student.email,
               "max_score": assignment.max_score}
        sub = gradebook_lookups.submission(gradebook, assignment.name, student.id)
        if sub is None:
            row.update(timestamp="", raw_score=0.0, late_submission_penalty=0.0, score=0.0)
        else:
            penalty = sub.late_submission_penalty
            row.update(timestamp=sub.timestamp, raw_score=sub.score,
                       late_submission_penalty=penalty, score=max(0.0, sub.score - penalty))
        return row


def _cell(value) -> str:
    """A value as nbgrader's export writes it: str(), None as an empty cell."""
    return "" if value is None else str(value)
