"""Small nbgrader notebooks written by the tests, and their cells found by nbgrader's ids: one
way to mark a cell as nbgrader does, one to find it again."""

from __future__ import annotations

from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


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


def text_cell(source: str, grade_id: str):
    """A locked markdown cell (the instructor's text)."""
    return nbgrader_cell(new_markdown_cell(source), grade_id)


def solution_cell(source: str, grade_id: str):
    """A code cell the student answers in."""
    return nbgrader_cell(new_code_cell(source), grade_id, solution=True)


def grade_cell(source: str, grade_id: str, points: float):
    """A code cell of autograded tests worth POINTS."""
    return nbgrader_cell(new_code_cell(source), grade_id, grade=True, points=points)


def nbgrader_notebook(cells):
    """A notebook of these cells for the python3 kernel, as an instructor's source notebook."""
    return new_notebook(cells=cells, metadata={"kernelspec": dict(KERNELSPEC)})


def grade_id(cell):
    """The cell's nbgrader id; None for a cell nbgrader does not know."""
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def cell_of(nb, grade_id_):
    """The notebook's cell of that nbgrader id."""
    return next(c for c in nb.cells if grade_id(c) == grade_id_)
