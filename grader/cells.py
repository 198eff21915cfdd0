"""What kind of cell a notebook cell is, from its nbgrader metadata.

The same rules as nbgrader.utils (`is_grade`, `is_solution`, `is_locked`), read from the metadata
directly so that the processes that execute notebooks never import nbgrader (importing any part
of it loads its Jupyter server extensions, a start-up cost each process would pay).
"""


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def is_grade(cell) -> bool:
    return bool(_nbgrader(cell).get("grade", False))


def is_solution(cell) -> bool:
    return bool(_nbgrader(cell).get("solution", False))


def is_locked(cell) -> bool:
    """Overwritten by the instructor's source when graded: a grade cell that is not an answer,
    or a cell marked `locked`."""
    if is_solution(cell):
        return False
    return is_grade(cell) or bool(_nbgrader(cell).get("locked", False))


def is_test_cell(cell) -> bool:
    """A code cell nbgrader grades that is not an answer: a test (visible or hidden)."""
    return cell.cell_type == "code" and is_grade(cell) and not is_solution(cell)


def is_instructor_cell(cell) -> bool:
    """A read-only code cell of the instructor's that is neither a test nor an answer."""
    return (cell.cell_type == "code" and is_locked(cell) and not is_grade(cell)
            and not is_solution(cell))
