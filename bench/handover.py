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

import functools
import statistics
import sys
import tempfile
from pathlib import Path

import nbformat
from in_process import arguments, cpu_of, grade_sample_class

from grader.nbgrader.config import setup_process
from grader.notebooks import handover


def handed_over(assignment: str, work: Path) -> list:
    """Every notebook the stages hand over for the sample class: sanitized, then executed."""
    return [nbformat.reads(text, as_version=4)
            for task, outcome in grade_sample_class(assignment, work)
            for text in (*task.notebooks.values(), *outcome["notebooks"].values())]


def main(argv: list[str]) -> int:
    args = arguments(__doc__, argv)
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
