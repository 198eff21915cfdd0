"""Benchmark: how long autograding ONE submission of each assignment takes.

Target (issue "Assignments"): under 60 s per submission on 2 CPU cores. For each assignment it
releases the notebook, writes a perfect submission, and times, in this one process:

  baseline   executing the source notebook (solutions + all tests) with nbclient alone,
  autograde  `grader.autograde` on the submission (nbgrader's full pipeline: sanitise,
             restore test cells, execute with the student's code in a worker forked from a
             pre-imported process and the tests in the grader, save grades). The first
             assignment also pays for starting that process; the others reuse it;

and prints both, their ratio (the grader's overhead), and the share of the 60 s budget.

    .venv/bin/python bench/autograde_one.py [ASSIGNMENT ...]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from grader.autograde import autograde
from grader.course import KERNEL_ARGS, REPO, Course, setup_process
from grader.demo.sample_class import SAMPLE_CLASSES, write_class
from grader.release import release

BUDGET = 60.0  # seconds per submission on 2 cores


def run_notebook(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=False,
                            extra_arguments=KERNEL_ARGS,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


def bench(assignment: str, work: Path) -> tuple[float, float, float]:
    course = Course(work / "course")
    released = release(course, assignment)
    alice = [s for s in SAMPLE_CLASSES[assignment] if s.id == "alice"]
    notebook = f"{assignment}.ipynb"
    submissions = write_class(course.source / assignment / notebook, released / notebook,
                              alice, work / "submissions", assignment)
    baseline = run_notebook(course.source / assignment / notebook)
    start = time.perf_counter()
    [result] = autograde(course, assignment, submissions, progress=lambda line: None)
    graded = time.perf_counter() - start
    if result.error or result.auto_score != result.auto_max:
        raise SystemExit(f"{assignment}: the perfect submission was not fully graded: {result}")
    return baseline, graded, result.auto_max


def main(assignments: list[str]) -> int:
    setup_process()
    print(f"{'assignment':<16} {'baseline s':>10} {'autograde s':>11} {'ratio':>6} "
          f"{'of 60 s':>8}")
    worst = 0.0
    for assignment in assignments or list(SAMPLE_CLASSES):
        with tempfile.TemporaryDirectory() as tmp:
            baseline, graded, _ = bench(assignment, Path(tmp))
        worst = max(worst, graded)
        print(f"{assignment:<16} {baseline:>10.1f} {graded:>11.1f} {graded / baseline:>6.2f} "
              f"{graded / BUDGET:>8.0%}")
    verdict = "within" if worst < BUDGET else "OVER"
    print(f"slowest submission: {worst:.1f} s, {verdict} the {BUDGET:.0f} s budget")
    return 0 if worst < BUDGET else 1


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main(sys.argv[1:]))
