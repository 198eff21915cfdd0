"""Look-ups in nbgrader's gradebook, in one place: what is not there is None, never nbgrader's
MissingEntry escaping into a caller's control flow."""

from __future__ import annotations

from nbgrader.api import Gradebook, MissingEntry


def assignment(gb: Gradebook, name: str):
    """The gradebook's assignment `name`, or None when it was never released into it."""
    try:
        return gb.find_assignment(name)
    except MissingEntry:
        return None


def submission(gb: Gradebook, assignment: str, student: str):
    """`student`'s submission of `assignment`, or None when they have none in the gradebook."""
    try:
        return gb.find_submission(assignment, student)
    except MissingEntry:
        return None
