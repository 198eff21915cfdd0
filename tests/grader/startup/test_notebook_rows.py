"""NotebookRows answers nbgrader's per-cell lookups for one notebook from rows read once: the
same rows nbgrader's finders return, nbgrader's own error for what is not there."""

from __future__ import annotations

import pytest
from nbgrader.api import Gradebook, MissingEntry
from sqlalchemy import event

from grader.nbgrader.config import setup_process
from grader.startup.notebook_rows import NotebookRows

CELLS = ("answer", "auto", "task", "written", "both")  # and "readme", a source cell only


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    """Two notebooks with the same cell names, one student's submission of both: "answer" is a
    grade cell and a solution cell (a written answer), "auto" a grade cell, "task" a task
    cell, "written" a solution cell only, "both" a grade, a task and a solution cell (nbgrader
    looks for a grade cell before a task cell, a solution cell before a task cell)."""
    setup_process()  # nbgrader runs `alembic` when it creates a gradebook
    url = f"sqlite:///{tmp_path_factory.mktemp('rows') / 'gradebook.db'}"
    with Gradebook(url, "course") as gb:
        gb.add_assignment("a")
        gb.add_student("ada")
        for nb in ("one", "two"):
            gb.add_notebook(nb, "a")
            gb.add_grade_cell("answer", nb, "a", max_score=2, cell_type="markdown")
            gb.add_solution_cell("answer", nb, "a")
            gb.add_grade_cell("auto", nb, "a", max_score=3, cell_type="code")
            gb.add_task_cell("task", nb, "a", max_score=4, cell_type="markdown")
            gb.add_solution_cell("written", nb, "a")
            gb.add_grade_cell("both", nb, "a", max_score=1, cell_type="code")
            gb.add_task_cell("both", nb, "a", max_score=5, cell_type="markdown")
            gb.add_solution_cell("both", nb, "a")
            for name in (*CELLS, "readme"):
                gb.add_source_cell(name, nb, "a", cell_type="code", source=f"{nb}/{name}",
                                   checksum=f"{nb}-{name}", locked=name == "auto")
        gb.add_submission("a", "ada")
        yield gb


def lookups(student="ada", notebook="one"):
    """Every lookup nbgrader's steps make, with what it is called with."""
    for name in (*CELLS, "readme", "nothing"):
        yield "find_source_cell", (name, notebook, "a")
        yield "find_graded_cell", (name, notebook, "a")
        yield "find_grade", (name, notebook, "a", student)
        yield "find_comment", (name, notebook, "a", student)


def outcome(finder, args):
    try:
        return finder(*args)
    except MissingEntry as e:
        return f"MissingEntry: {e}"


def test_the_same_rows_as_nbgraders_finders_and_its_error_for_the_rest(gradebook):
    rows = NotebookRows(gradebook, "one", "a", "ada")
    found = 0
    for notebook in ("one", "two"):  # "two" is not the notebook it read: passed on
        for method, args in lookups(notebook=notebook):
            ours = outcome(getattr(rows, method), args)
            theirs = outcome(getattr(gradebook, method), args)
            assert ours is theirs or ours == theirs, (method, args, ours, theirs)
            found += not isinstance(ours, str)
    assert found == 2 * (6 + 4 + 4 + 4)  # source cells, graded cells, grades, comments
    # a shared name resolves as in nbgrader: the grade cell, its grade, the solution's comment
    assert type(rows.find_graded_cell("both", "one", "a")).__name__ == "GradeCell"
    assert type(rows.find_grade("both", "one", "a", "ada").cell).__name__ == "GradeCell"
    assert type(rows.find_comment("both", "one", "a", "ada").cell).__name__ == "SolutionCell"
    assert rows.find_student("ada").id == "ada"  # everything else is the gradebook's


def test_each_kind_of_row_is_read_once_however_many_lookups(gradebook):
    found = [(method, args) for method, args in lookups()
             if not isinstance(outcome(getattr(gradebook, method), args), str)]
    queries = []

    def count(*args):
        queries.append(args[2])

    rows = NotebookRows(gradebook, "one", "a", "ada")
    event.listen(gradebook.engine, "before_cursor_execute", count)
    try:
        for _ in range(3):
            for method, args in found:
                getattr(rows, method)(*args)
        ours = len(queries)
        for method, args in found:
            getattr(gradebook, method)(*args)
    finally:
        event.remove(gradebook.engine, "before_cursor_execute", count)
    # per kind: its notebook (or the submitted notebook), then its rows (graded cells: two)
    assert ours <= 9, queries[:ours]
    assert len(queries) - ours >= len(found) == 18  # nbgrader's: one or more per lookup


def test_graded_cells_come_with_their_own_columns(gradebook):
    """nbgrader's steps read a graded cell's max_score and cell_type (its subclass's table):
    read with the cells, not one query per cell afterwards."""
    gradebook.db.expire_all()  # as after a commit: nothing loaded before counts
    rows = NotebookRows(gradebook, "one", "a")
    cells = [rows.find_graded_cell(name, "one", "a") for name in ("answer", "auto", "task",
                                                                   "both")]
    queries = []

    def count(*args):
        queries.append(args[2])

    event.listen(gradebook.engine, "before_cursor_execute", count)
    try:
        read = [(c.name, c.max_score, c.cell_type) for c in cells]
    finally:
        event.remove(gradebook.engine, "before_cursor_execute", count)
    assert read == [("answer", 2, "markdown"), ("auto", 3, "code"), ("task", 4, "markdown"),
                    ("both", 1, "code")]
    assert not queries, queries
