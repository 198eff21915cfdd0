"""Student versions of the source notebooks (nbgrader's generate_assignment), and publishing
them to the exchange (nbgrader's release_assignment), where students fetch them."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from grader.course import COURSE_ID, Course
from grader.nbgrader.api import api_for, ok


def release(course: Course, assignment: str, due: datetime | None = None) -> Path:
    """Strip solutions and hidden tests from `assignment`, record it in the gradebook (with its
    due date, when given), and return the folder of released files."""
    if assignment not in course.assignments():
        raise ValueError(f"no assignment {assignment!r} in {course.source} "
                         f"(found: {', '.join(course.assignments()) or 'none'})")
    ok(api_for(course).generate_assignment(assignment, force=True, create=True),
       f"releasing {assignment}")
    if due is not None:
        set_due(course, assignment, due)
    return course.release / assignment


def set_due(course: Course, assignment: str, due: datetime) -> None:
    """Record the due date; nbgrader keeps dates as naive UTC and marks later submissions
    late (their time is the one the exchange gave them, see grader.nbgrader.collect)."""
    if due.tzinfo is None:
        raise ValueError(f"due date {due} has no time zone")
    with course.gradebook() as gb:
        gb.update_or_create_assignment(assignment,
                                       duedate=due.astimezone(UTC).replace(tzinfo=None))


def publish(course: Course, assignment: str) -> Path:
    """Put the released student version in the exchange's outbound folder (replacing an
    earlier one); returns that folder."""
    outbound = course.exchange / COURSE_ID / "outbound" / assignment
    shutil.rmtree(outbound, ignore_errors=True)
    ok(api_for(course).release_assignment(assignment), f"publishing {assignment}")
    return outbound
