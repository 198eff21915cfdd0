"""Benchmark: a notebook handed from one grading stage to the next, as JSON.

Stage 1 hands each sanitized notebook to the pool, and the pool hands it back executed, as JSON
(grader.notebooks.handover). This grades the sample class of one assignment (stages 1 and 2, in
this process), then times writing each notebook the stages hand over, both ways, in this
process: nbformat.writes (a copy, a validation, the pure-Python encoder's indenting) against
the hand-over (the C encoder, compact), and reading each back with nbformat.reads. Each figure
is the class's total for one pass, the least of `--repeats` passes; the spread is printed.

    .venv/bin/python bench/handover.py [ASSIGNMENT] [--repeats R]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from grader.course import Course, setup_process
from grader.demo.sample_class import SAMPLE_CLASSES, write_class
from grader.notebooks import handover
from grader.release import release


def handed_over(assignment: str, work: Path) -> list:
    """Every notebook the stages hand over for the sample class: sanitized, then executed."""
    from grader.autograde import prepare
    from grader.parallel import execute

    course = Course(work / "course")
    released = release(course, assignment) / f"{assignment}.ipynb"
    students = SAMPLE_CLASSES[assignment]
    folder = write_class(course.source / assignment / f"{assignment}.ipynb", released, students,
                         work / "submissions", assignment)
    notebooks = []
    for student in students:
        task, error, _ = prepare(course, assignment, student.id,
                                 folder / student.id / assignment, None, False)
        if error:
            raise SystemExit(f"{student.id} could not be prepared: {error}")
        outcome = execute(task)
        for text in (*task.notebooks.values(), *outcome["notebooks"].values()):
            notebooks.append(nbformat.reads(text, as_version=4))
    return notebooks


def cpu_of(fn, notebooks: list, repeats: int) -> list[float]:
    """CPU seconds of fn over every notebook, once per repeat."""
    runs = []
    for _ in range(repeats):
        start = time.process_time()
        for nb in notebooks:
            fn(nb)
        runs.append(time.process_time() - start)
    return runs


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("assignment", nargs="?", default="self_attention")
    p.add_argument("--repeats", type=int, default=20)
    args = p.parse_args(argv)
    setup_process()
    with tempfile.TemporaryDirectory() as tmp:
        notebooks = handed_over(args.assignment, Path(tmp))
    read = functools.partial(nbformat.reads, as_version=4)
    rows = {
        "nbformat.writes": cpu_of(nbformat.writes, notebooks, args.repeats),
        "handover": cpu_of(handover, notebooks, args.repeats),
        "nbformat.reads of nbformat.writes": cpu_of(
            read, [nbformat.writes(nb) for nb in notebooks], args.repeats),
        "nbformat.reads of handover": cpu_of(
            read, [handover(nb) for nb in notebooks], args.repeats),
    }
    n = len(notebooks)
    print(f"{n} notebooks handed over grading the sample class of {args.assignment}; least of "
          f"{args.repeats} passes (median in brackets), ms per notebook:")
    for name, runs in rows.items():
        print(f"  {name:<36} {1000 * min(runs) / n:6.2f}  "
              f"({1000 * statistics.median(runs) / n:.2f})")
    writes, ours = min(rows["nbformat.writes"]), min(rows["handover"])
    print(f"hand-over: {writes / ours:.1f} x less CPU than nbformat.writes; two a notebook "
          f"graded (stage 1 to the pool, back): {2000 * (writes - ours) / n:.1f} ms saved")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
