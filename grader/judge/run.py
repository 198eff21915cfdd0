"""Stage 2 of grading, one notebook: what a pool process runs (grader/pipeline/pools.py).

Kept apart from nbgrader's steps (execute.py) so that the processes that execute notebooks import
torch and the judge but never nbgrader: start-up is paid once per grading command, and it is
most of what a small class costs (bench/autograde_class.py).
"""

from __future__ import annotations

from grader.cells import is_test_cell
from grader.judge.scan import scan
from grader.sandbox.confinement import confinement
from grader.submission import Flag, Limits, Plan, flag, unique


def run_notebook(nb, name: str, plan: Plan, unconfined: bool = False) -> list[Flag]:
    """Execute a sanitized notebook in place (student's cells in the sandbox, tests here);
    returns its flags."""
    from grader.judge.memo import across_notebooks
    from grader.judge.notebook import Judge  # torch: imported by the processes that execute

    across_notebooks()  # the reference outputs, for the next notebook this process judges
    flags = [flag("suspicious", why) for cell in nb.cells
             if cell.cell_type == "code" and not is_test_cell(cell) for why in scan(cell.source)]
    judge = Judge(plan.files, frozenset(plan.answers.get(name, [])),
                  plan.limits.get(name) or Limits(), True, confinement(unconfined),
                  preload=tuple(plan.preload))
    judge.run(nb)
    return unique(flags + judge.flags)
