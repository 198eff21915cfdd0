"""Benchmark: what one student waits for, and what grading one submission costs, per assignment.

For each assignment it releases the notebook, writes a perfect submission (the sample class's
"alice"), and times, each in a fresh process as a student or an instructor would run it:

  Run All    the student's notebook executed top to bottom in a fresh kernel (nbclient), with
             whatever threads the notebook itself sets;
  check      `python -m grader check NOTEBOOK`: the visible tests, as a student runs them;
  autograde  `python -m grader autograde` on that one submission (a fresh command: its
             start-up, the sandbox, the hidden tests, the gradebook), against Run All.

Budgets on 2 cores: Run All and check within 20 s each (issue "Course v2", the student's loop);
one autograded submission within 60 s. Each figure is the least of `--repeats` runs (default 2),
and the spread is printed.

    .venv/bin/python bench/autograde_one.py [ASSIGNMENT ...] [--repeats R]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from grader.course import KERNEL_ARGS, REPO, Course
from grader.demo.sample_class import SAMPLE_CLASSES, write_class
from grader.nbgrader.config import setup_process
from grader.nbgrader.release import release

STUDENT_BUDGET = 20.0  # seconds for Run All, and for `grader check`, on 2 cores
GRADE_BUDGET = 60.0  # seconds to autograde one submission on 2 cores


def run_all(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                            extra_arguments=KERNEL_ARGS,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


def command(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "grader", *argv], capture_output=True,
                          text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"`grader {' '.join(argv)}` failed ({done.returncode}):\n"
                         f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return seconds


def bench(assignment: str, work: Path, repeats: int) -> dict[str, list[float]]:
    template = Course(work / "template")
    released = release(template, assignment)
    alice = [s for s in SAMPLE_CLASSES[assignment] if s.id == "alice"]
    notebook = f"{assignment}.ipynb"
    submissions = write_class(template.source / assignment / notebook, released / notebook,
                              alice, work / "submissions", assignment)
    mine = submissions / "alice" / assignment / notebook
    times: dict[str, list[float]] = {"run all": [], "check": [], "autograde": []}
    for r in range(repeats):
        times["run all"].append(run_all(mine))
        times["check"].append(command(["check", str(mine)]))
        course = work / f"course-{r}"
        shutil.copytree(template.root, course)
        times["autograde"].append(command(["--course", str(course), "autograde", assignment,
                                           "--submissions", str(submissions)]))
    return times


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("assignments", nargs="*", help="default: every assignment")
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args(argv)
    setup_process()
    print(f"least of {args.repeats} runs each (spread: the largest); budgets: Run All and "
          f"check {STUDENT_BUDGET:.0f} s, autograde {GRADE_BUDGET:.0f} s")
    print(f"{'assignment':<20} {'Run All s':>14} {'check s':>14} {'autograde s':>14} "
          f"{'/ Run All':>9}")
    over = []
    for assignment in args.assignments or list(SAMPLE_CLASSES):
        with tempfile.TemporaryDirectory() as tmp:
            t = bench(assignment, Path(tmp), args.repeats)
        best = {k: min(v) for k, v in t.items()}
        cells = [f"{best[k]:6.1f} ({max(t[k]):5.1f})" for k in ("run all", "check", "autograde")]
        print(f"{assignment:<20} {cells[0]:>14} {cells[1]:>14} {cells[2]:>14} "
              f"{best['autograde'] / best['run all']:>9.2f}")
        over += [f"{assignment} {k}" for k in ("run all", "check")
                 if best[k] > STUDENT_BUDGET]
        over += [f"{assignment} autograde"] if best["autograde"] > GRADE_BUDGET else []
    print("every figure within its budget" if not over else f"OVER budget: {', '.join(over)}")
    return 0 if not over else 1


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main(sys.argv[1:]))
