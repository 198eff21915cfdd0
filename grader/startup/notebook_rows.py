"""One notebook's rows of nbgrader's gradebook, read once instead of once per cell.

nbgrader's OverwriteCells and SaveAutoGrades look up each cell's row on its own (a source cell,
a graded cell, a grade, a comment: about seventy queries a notebook, each joining up to six
tables). `NotebookRows` stands in for the Gradebook those steps hold (grader.nbgrader.patches
puts it there): the first lookup of a kind
reads that kind's rows for the notebook in one query, later lookups of that notebook are
answered from them, and anything else (a name not among them, another notebook, every other
method) goes to the gradebook itself, so what is not found raises nbgrader's own MissingEntry.
The rows are the gradebook session's own objects: a change to one is a change nbgrader commits.
"""

from __future__ import annotations

from nbgrader.api import BaseCell, Comment, Grade, GradeCell, TaskCell

# The cell kinds a graded cell, a grade and a comment can belong to. nbgrader's finders look
# for the second kind first, so where both have a cell of the same name, the second's is it.
_GRADED, _COMMENTED = ("TaskCell", "GradeCell"), ("TaskCell", "SolutionCell")
# Read together: a submission's grades and comments are both changed by SaveAutoGrades, so both
# are read before the first change, and no query flushes a change half-way (one flush a notebook).
_TOGETHER = ("find_grade", "find_comment")


class NotebookRows:
    def __init__(self, gradebook, notebook: str, assignment: str, student: str | None = None):
        self._gradebook = gradebook
        self._notebook, self._assignment, self._student = notebook, assignment, student
        self._rows: dict[str, dict] = {}  # finder -> {cell name: row}

    def __getattr__(self, name):
        return getattr(self._gradebook, name)

    def find_source_cell(self, name, notebook, assignment):
        return self._find("find_source_cell", (name, notebook, assignment))

    def find_graded_cell(self, name, notebook, assignment):
        return self._find("find_graded_cell", (name, notebook, assignment))

    def find_grade(self, grade_cell, notebook, assignment, student):
        return self._find("find_grade", (grade_cell, notebook, assignment, student))

    def find_comment(self, solution_cell, notebook, assignment, student):
        return self._find("find_comment", (solution_cell, notebook, assignment, student))

    def _find(self, finder: str, args: tuple):
        """The row `finder` (the gradebook's method of that name) would return for `args`."""
        name, where = args[0], args[1:]
        if where == (self._notebook, self._assignment, self._student)[:len(where)]:
            if finder not in self._rows:
                for kind in _TOGETHER if finder in _TOGETHER else (finder,):
                    self._rows[kind] = self._read(kind)
            if name in self._rows[finder]:
                return self._rows[finder][name]
        return getattr(self._gradebook, finder)(*args)

    def _read(self, finder: str) -> dict:
        gb = self._gradebook
        if finder in ("find_source_cell", "find_graded_cell"):
            notebook = gb.find_notebook(self._notebook, self._assignment)
            if finder == "find_source_cell":
                return {cell.name: cell for cell in notebook.source_cells}
            # Each kind in one query with its own table's columns: the notebook's list of cells
            # would load them one row at a time, on first reading a cell's max_score.
            rows = {}
            for kind in (TaskCell, GradeCell):  # (as in _GRADED: the second kind wins)
                rows.update({cell.name: cell for cell in gb.db.query(kind)
                             .filter(kind.notebook_id == notebook.id).all()})
            return rows
        submitted = gb.find_submission_notebook(self._notebook, self._assignment,
                                                self._student)
        table, order = (Grade, _GRADED) if finder == "find_grade" else (Comment, _COMMENTED)
        found = gb.db.query(table, BaseCell.name, BaseCell.type) \
            .join(BaseCell, BaseCell.id == table.cell_id) \
            .filter(table.notebook_id == submitted.id).all()
        rows = {}
        for cell_type in order:
            rows.update({name: row for row, name, t in found if t == cell_type})
        return rows
