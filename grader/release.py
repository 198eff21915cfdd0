"""Student versions of the source notebooks (nbgrader's generate_assignment)."""

from __future__ import annotations

from pathlib import Path

from grader.course import Course
from grader.nbgrader_api import api_for, ok


def release(course: Course, assignment: str) -> Path:
    """Strip solutions and hidden tests from `assignment`, record it in the gradebook, and
    return the folder of released files."""
    if assignment not in course.assignments():
        raise ValueError(f"no assignment {assignment!r} in {course.source} "
                         f"(found: {', '.join(course.assignments()) or 'none'})")
    ok(api_for(course).generate_assignment(assignment, force=True, create=True),
       f"releasing {assignment}")
    return course.release / assignment
