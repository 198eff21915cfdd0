"""Grades to CSV: nbgrader's own format, or one that Canvas or Moodle imports (grader/lms)."""

from __future__ import annotations

import logging
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.plugins import CsvExportPlugin

from grader.course import COURSE_ID, Course, setup_process
from grader.lms import Assignment, GradeTable, StudentGrades, canvas, moodle

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
    with Gradebook(course.db_url, COURSE_ID) as gb:
        if format == "nbgrader":
            CsvExportPlugin(to=str(to)).export(gb)
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
