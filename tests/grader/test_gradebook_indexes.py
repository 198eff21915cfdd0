"""A grading run gives the gradebook the indexes nbgrader's score sums need
(grader/startup/gradebook_indexes.py): a submission's scores read its own rows, not every grade of
the
class, so recording a notebook does not cost more as the class grows."""

from __future__ import annotations

import logging

import sqlalchemy
from nbgrader.api import Gradebook, SubmittedAssignment, SubmittedNotebook
from sqlalchemy import select

from grader.nbgrader.config import setup_process
from grader.startup import gradebook_indexes
from grader.startup.engines import shared_engines


def _a_submission(url: str) -> str:
    """A gradebook at `url` with one graded submission; its id."""
    with Gradebook(url, "course") as gb:
        gb.add_assignment("attention")
        gb.add_notebook("attention", "attention")
        gb.add_grade_cell("test_sdpa", "attention", "attention", max_score=2, cell_type="code")
        gb.add_student("ada")
        return gb.add_submission("attention", "ada").id


def _scans(url: str, submission: str) -> list[str]:
    """The tables SQLite reads whole to work out the submission's scores as nbgrader does."""
    engine = sqlalchemy.create_engine(url)
    sums = [select(SubmittedAssignment.score), select(SubmittedAssignment.code_score),
            select(SubmittedAssignment.needs_manual_grade)]
    sums = [s.where(SubmittedAssignment.id == submission) for s in sums]
    sums.append(select(SubmittedNotebook.score).where(
        SubmittedNotebook.assignment_id == submission))
    scans = []
    with engine.connect() as conn:
        for statement in sums:
            sql = statement.compile(engine, compile_kwargs={"literal_binds": True})
            plan = [row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}")]
            scans += [step for step in plan if step.startswith("SCAN ")]
    engine.dispose()
    return scans


def test_a_run_indexes_what_the_score_sums_join_by(tmp_path):
    setup_process()  # nbgrader runs `alembic` when it creates a gradebook
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    submission = _a_submission(url)
    before = _scans(url, submission)
    assert any(step.startswith("SCAN grade") for step in before), before  # nbgrader's own
    with shared_engines(), Gradebook(url, "course") as gb:  # how a grading run opens it
        names = {ix["name"] for table in ("grade", "comment", "submitted_notebook",
                                          "submitted_assignment")
                 for ix in sqlalchemy.inspect(gb.engine).get_indexes(table)}
    assert set(gradebook_indexes.INDEXES) <= names, names
    assert not any(step.startswith(("SCAN grade", "SCAN submitted_notebook"))
                   for step in _scans(url, submission)), _scans(url, submission)
    with shared_engines(), Gradebook(url, "course") as gb:  # a second run: nothing to add
        assert gb.find_submission("attention", "ada").score == 0


def test_an_index_that_cannot_be_made_costs_speed_never_the_run(tmp_path, caplog):
    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'empty.db'}")  # no tables
    with caplog.at_level(logging.INFO, logger="grader.startup.gradebook_indexes"):
        gradebook_indexes.ensure(engine)
    engine.dispose()
    assert len(caplog.records) == len(gradebook_indexes.INDEXES)
    assert all("not made" in r.getMessage() for r in caplog.records)
