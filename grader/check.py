"""`python -m grader check NOTEBOOK`: a student runs the visible tests and sees what passes.

The notebook is executed in a fresh kernel, in memory: the file on disk is not changed. (The
grader, unlike this check, runs the tests outside the student's process; see grader/sandbox.)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from grader import notebook_schema
from grader.course import CELL_TIMEOUT, KERNEL_ARGS, setup_process
from grader.notebooks import read_notebook
from grader.shown import shown
from grader.threads import ONE_THREAD


@dataclass
class TestResult:
    name: str
    points: float
    passed: bool
    message: str = ""
    hidden: bool = False  # a released cell whose tests were removed: graded after submission


def _has_code(source: str) -> bool:
    return any(line.strip() and not line.strip().startswith("#") for line in source.splitlines())


def _first_error(cell) -> str | None:
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            return f"{output.ename}: {output.evalue}"
    return None


def kernel_environment() -> dict[str, str]:
    """The student's environment, with PyTorch and numpy on one thread each (grader.threads):
    the course's models are tiny, and on a laptop's busy cores thread hand-offs cost more than
    the arithmetic (bench/autograde_one.py prints how long a student waits for this check, per
    assignment)."""
    return {**os.environ, **ONE_THREAD}


def run_visible_tests(path: Path, timeout: int = CELL_TIMEOUT) -> list[TestResult]:
    setup_process()
    notebook_schema.install()  # (reading validates the notebook: the stored validator)
    path = Path(path).resolve()
    nb = read_notebook(path)
    client = NotebookClient(nb, timeout=timeout, allow_errors=True, kernel_name="python3",
                            extra_arguments=KERNEL_ARGS,
                            resources={"metadata": {"path": str(path.parent)}})
    stopped = None
    try:
        client.execute(env=kernel_environment())
    except CellTimeoutError:
        stopped = f"a cell ran longer than {timeout} s and was stopped"
    except DeadKernelError:
        stopped = "the kernel died (out of memory, or the code exited Python)"

    results = []
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution"):
            continue
        error = _first_error(cell)
        ran = bool(cell.get("execution_count"))
        if error is None and not ran:
            error = f"not run: {stopped or 'execution stopped before this cell'}"
        results.append(TestResult(meta.get("grade_id", "?"), float(meta.get("points", 0)),
                                  error is None, error or "", hidden=not _has_code(cell.source)))
    return results


def report(results: list[TestResult], path: Path) -> str:
    """What the terminal shows. Test names and messages come from the notebook (a submission's,
    when an instructor checks one): each of their control characters is shown as an escape
    (grader.shown), so none can move the cursor, rewrite a PASS line or retitle the window."""
    lines = [f"Visible tests in {shown(path)}:"]
    for r in results:
        if r.hidden:
            lines.append(f"  ....  {shown(r.name)} ({r.points:g} pt): hidden, run when graded")
            continue
        mark = "PASS" if r.passed else "FAIL"
        lines.append(f"  {mark}  {shown(r.name)} ({r.points:g} pt)")
        if r.message:
            lines.extend(f"          {shown(line)}" for line in r.message.split("\n")[:6])
    visible = [r for r in results if not r.hidden]
    passed = sum(r.passed for r in visible)
    lines.append(f"{passed} of {len(visible)} visible tests pass. Hidden tests run when the "
                 "instructor grades your submission.")
    return "\n".join(lines)
