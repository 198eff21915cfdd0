"""A fault shared by every student is held for the instructor, not charged.

When one test fails with the very same error for every student graded in a run (at least
MIN_STUDENTS of them), the likelier cause is the grading machine or the test itself (a data file
missing since the preflight's verdict was cached, a test that cannot pass), not a class that
made one mistake word for word. The grades are recorded as usual, but the run is held: its
status (status/run/ASSIGNMENT.json, written by grader.pipeline.grades) names each such test and
its error, autograde exits with status 4, and `feedback` and `export` refuse the assignment
until it is graded again without the shared failure or the instructor passes --accept-held.
"""

from __future__ import annotations

import json

from grader.cells import is_grade, is_solution

MIN_STUDENTS = 3  # fewer students sharing one error is no evidence against the machine


def error_of(cell) -> str | None:
    """'Name: message' of a code cell's first error output, or None."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}".rstrip(": ")
    return None


def failed_tests(notebooks: dict[str, str]) -> dict[str, str]:
    """{"NOTEBOOK: GRADE_ID": its error} for each test cell that raised, in executed notebooks
    ({name: notebook JSON}, as stage 2 hands them back)."""
    failed = {}
    for name, text in notebooks.items():
        for cell in json.loads(text).get("cells", []):
            if cell.get("cell_type") == "code" and is_grade(cell) and not is_solution(cell):
                error = error_of(cell)
                if error is not None:
                    grade_id = cell["metadata"]["nbgrader"].get("grade_id", "?")
                    failed[f"{name}: {grade_id}"] = error
    return failed


def shared_failures(results) -> list[dict]:
    """[{"test", "error", "students"}] for each test that failed with the same error for every
    student graded in this run (results without an error, not skipped), when there are at
    least MIN_STUDENTS of them."""
    graded = [r for r in results if not r.error and not r.skipped]
    if len(graded) < MIN_STUDENTS:
        return []
    first = graded[0].failed
    return [{"test": test, "error": error, "students": len(graded)}
            for test, error in sorted(first.items())
            if all(r.failed.get(test) == error for r in graded[1:])]


def hold(results, before: list[dict]) -> list[dict]:
    """The run's hold: the shared failures of this run's students; `before` (the last run's
    hold) stands when this run graded too few students to tell (one student graded again does
    not clear a fault the rest of the class shares)."""
    graded = [r for r in results if not r.error and not r.skipped]
    return shared_failures(results) if len(graded) >= MIN_STUDENTS else before


def describe(assignment: str, held: list[dict]) -> list[str]:
    """The hold in words, for the instructor: its lines (each to be shown escaped: the errors
    are the students' code's)."""
    lines = [f"{assignment} is held: {len(held)} test(s) failed with the same error for every "
             "student graded, which points at this machine or the test rather than at them:"]
    lines += [f"  {h['test']} ({h['students']} students): {h['error']}" for h in held]
    lines.append(f"Grades are recorded, but `feedback` and `export` refuse {assignment} until "
                 "it is graded again without this (fix what the error names, then "
                 f"`autograde {assignment} --force`), or until you pass them --accept-held "
                 "(the students really all made this mistake).")
    return lines
