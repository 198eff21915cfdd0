"""Per-student feedback pages (nbgrader's generate_feedback), without the hidden tests."""

from __future__ import annotations

import shutil
from pathlib import Path

from grader.course import Course
from grader.nbgrader_api import api_for, reason


def feedback(course: Course, assignment: str, students: list[str] | None = None,
             to: Path | None = None) -> dict[str, list[Path] | str]:
    """Generate feedback HTML for each autograded student: {student: pages, or the error}.

    With `to`, pages are also copied to to/STUDENT.html (or to/STUDENT/NOTEBOOK.html when the
    assignment has several notebooks).
    """
    if students is None:
        students = sorted(p.parent.name for p in course.autograded.glob(f"*/{assignment}"))
    api = api_for(course)
    pages: dict[str, list[Path] | str] = {}
    for student in students:
        result = api.generate_feedback(assignment, student, force=True)
        if not result.get("success"):
            pages[student] = reason(result)
            continue
        html = sorted((course.feedback / student / assignment).glob("*.html"))
        if to is not None:
            html = _copy(html, Path(to), student)
        pages[student] = html
    return pages


def _copy(html: list[Path], to: Path, student: str) -> list[Path]:
    to.mkdir(parents=True, exist_ok=True)
    if len(html) == 1:
        targets = [to / f"{student}.html"]
    else:
        (to / student).mkdir(exist_ok=True)
        targets = [to / student / page.name for page in html]
    for page, target in zip(html, targets, strict=True):
        shutil.copyfile(page, target)
    return targets
