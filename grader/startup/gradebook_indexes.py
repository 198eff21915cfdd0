"""Indexes for the sums nbgrader works out in the gradebook, which its schema does not create.

nbgrader computes a submission's scores in SQL whenever one is loaded: sums over its grades, joined
through its notebooks (`SubmittedAssignment.score`, `code_score`, `needs_manual_grade`, and the same
for each notebook). Its tables are indexed only by their unique constraints, whose first columns are
the released cell and notebook, so each of those sums read every grade of the class: recording a
notebook cost more the more students the gradebook held. With an index on each column the sums join
by, they read one submission's rows.

An index changes no table and no row: nbgrader, its migrations and the formgrader read the
gradebook as before, only faster.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

INDEXES = {  # name -> (table, column): what the score sums join by
    "grader_ix_grade_notebook": ("grade", "notebook_id"),
    "grader_ix_comment_notebook": ("comment", "notebook_id"),
    "grader_ix_submitted_notebook_assignment": ("submitted_notebook", "assignment_id"),
    "grader_ix_submitted_assignment_student": ("submitted_assignment", "student_id"),
}


def ensure(engine) -> None:
    """Create the indexes the gradebook at `engine` lacks. One that cannot be made (another
    grading command making it at the same moment, a database that refuses) costs speed, never
    a grade: logged, and the gradebook is used as it is."""
    from sqlalchemy import Column, Index, MetaData, String, Table
    from sqlalchemy.exc import SQLAlchemyError

    for name, (table, column) in INDEXES.items():
        columns = Table(table, MetaData(), Column(column, String)).c
        try:
            Index(name, columns[column]).create(engine, checkfirst=True)
        except SQLAlchemyError as e:
            log.info("gradebook index %s on %s(%s) not made: %s", name, table, column, e)
