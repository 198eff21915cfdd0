"""Per-student feedback pages (nbgrader's generate_feedback), without the hidden tests.

Only pages the grader generated are handed out: NOTEBOOK.html for each notebook of the
assignment that was autograded for that student. nbgrader also carries every other file of the
submission into the feedback folder; those are never delivered, and nothing is reached through
a link (the intake keeps links out of the course, and the pages are read without following
any).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from grader.course import Course
from grader.files import write_atomic
from grader.html_safety import has_page_policy
from grader.intake import IntakeError, open_regular, read_regular
from grader.nbgrader.api import api_for, reason

log = logging.getLogger(__name__)


def feedback(course: Course, assignment: str, students: list[str] | None = None,
             to: Path | None = None) -> dict[str, list[Path] | str]:
    """Generate feedback HTML for each autograded student: {student: pages, or the error}.

    With `to`, pages are also copied to to/STUDENT.html (or to/STUDENT/NOTEBOOK.html when the
    assignment has several notebooks).
    """
    if students is None:
        students = _autograded_students(course, assignment)
        if not students:  # nothing to do is a mistake to say, not a silent success
            raise FileNotFoundError(
                f"nothing of {assignment} was autograded in {course.root}: run "
                f"`python -m grader autograde {assignment}` first")
    api = api_for(course)
    pages: dict[str, list[Path] | str] = {}
    for student in students:
        result = api.generate_feedback(assignment, student, force=True)
        if not result.get("success"):
            pages[student] = reason(result)
            continue
        try:
            found = _generated_pages(course, assignment, student)
            pages[student] = _deliver(found, Path(to), student) if to is not None else \
                [path for path, _ in found]
        except (IntakeError, OSError) as e:  # one student's odd folder never stops the others
            log.warning("feedback for %s not delivered: %s", student, e)
            pages[student] = f"feedback not delivered: {e}"
    return pages


def _autograded_students(course: Course, assignment: str) -> list[str]:
    """Students with a real autograded/STUDENT/ASSIGNMENT folder (links are not followed)."""
    if not course.autograded.is_dir():
        return []
    found = []
    with os.scandir(course.autograded) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and _is_real_dir(
                    Path(entry.path) / assignment):
                found.append(entry.name)
    return sorted(found)


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def _generated_pages(course: Course, assignment: str, student: str) -> list[tuple[Path, bytes]]:
    """(path, bytes) of each page generated from a notebook of the assignment that was
    autograded for `student`; each a regular file with one name, reached through no link, and
    made by our templates (sanitized, its policy first in its head: grader/html_safety.py)."""
    found = []
    for name in course.notebooks(assignment):
        notebook = f"{student}/{assignment}/{name}.ipynb"
        try:
            os.close(open_regular(course.autograded, notebook))
        except FileNotFoundError:
            continue  # not submitted: no page, as nbgrader does
        rel = f"{student}/{assignment}/{name}.html"
        try:
            page = read_regular(course.feedback, rel)
        except FileNotFoundError:
            raise IntakeError(f"no feedback page was generated for {name}.ipynb "
                              f"({course.feedback / rel})") from None
        if not has_page_policy(page):  # made by another configuration: not sanitized
            raise IntakeError(f"the feedback page {course.feedback / rel} was not made by the "
                              "grader's templates (no Content-Security-Policy): not delivered")
        found.append((course.feedback / rel, page))
    return found


def _deliver(pages: list[tuple[Path, bytes]], to: Path, student: str) -> list[Path]:
    """Write the pages' bytes to to/STUDENT.html (one notebook) or to/STUDENT/NAME.html."""
    to.mkdir(parents=True, exist_ok=True)
    if len(pages) == 1:
        targets = [to / f"{student}.html"]
    else:
        (to / student).mkdir(exist_ok=True)
        targets = [to / student / page.name for page, _ in pages]
    for (_, data), target in zip(pages, targets, strict=True):
        write_atomic(target, data)
    return targets


def publish_feedback(course: Course, assignment: str) \
        -> tuple[dict[str, str | None], dict[str, list[str]]]:
    """Put the generated pages in the exchange (nbgrader's release_feedback), one student at a time
    so that one odd submission (its secret file deleted, say) never stops the others: ({student:
    None, or why theirs was not published}, {student: the cells ("NOTEBOOK: grade_id") whose
    hand-graded points are not given yet}). Each student's server fetches only the pages of their
    own submissions (named by a hash of the secret their submission carried). A page published
    before its written answers are graded says "not graded yet" for them
    (grader.nbgrader.preprocessors.FeedbackGrades); the second dict is what the instructor is warned
    of."""
    api = api_for(course)
    published: dict[str, str | None] = {}
    for student in _autograded_students(course, assignment):
        result = api.release_feedback(assignment, student)
        published[student] = None if result.get("success") else reason(result)
        if published[student]:
            log.warning("feedback for %s not published: %s", student, published[student])
    return published, not_graded_yet(course, assignment, list(published))


def not_graded_yet(course: Course, assignment: str, students: list[str]) -> dict[str, list[str]]:
    """{student: ["NOTEBOOK: grade_id", ...]} of each answer graded by hand (a written answer)
    that has no score yet: neither a hand-given one nor nbgrader's automatic 0 for an answer
    left as released."""
    from grader.nbgrader import gradebook

    missing: dict[str, list[str]] = {}
    with course.gradebook() as gb:
        for student in students:
            submission = gradebook.submission(gb, assignment, student)
            if submission is None:
                continue
            cells = [f"{notebook.name}: {grade.name}" for notebook in submission.notebooks
                     for grade in notebook.grades
                     if grade.manual_score is None and grade.auto_score is None]
            if cells:
                missing[student] = sorted(cells)
    return missing
