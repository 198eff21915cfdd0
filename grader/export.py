"""Grades to CSV, in nbgrader's export format (one row per student and assignment)."""

from __future__ import annotations

from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.plugins import CsvExportPlugin

from grader.course import COURSE_ID, Course, setup_process


def export(course: Course, to: Path) -> Path:
    setup_process()
    if not course.has_gradebook:
        raise FileNotFoundError(f"no gradebook in {course.root}: autograde something first")
    to = Path(to)
    to.parent.mkdir(parents=True, exist_ok=True)
    with Gradebook(course.db_url, COURSE_ID) as gb:
        CsvExportPlugin(to=str(to)).export(gb)
    return to
