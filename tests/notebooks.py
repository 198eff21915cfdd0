"""Small nbgrader notebooks written by the tests: one way to mark a cell as nbgrader does."""

from __future__ import annotations


def nbgrader_cell(cell, grade_id, *, solution=False, grade=False, points=None):
    """`cell` with nbgrader's metadata (schema 3), as the formgrader's cell toolbar writes it:
    an answer cell is `solution`, a test cell is `grade` with `points`, anything else is
    locked."""
    meta = {"grade": grade, "grade_id": grade_id, "locked": not solution,
            "schema_version": 3, "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta
    return cell
