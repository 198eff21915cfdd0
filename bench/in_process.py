"""The sample class of an assignment graded in this process (stages 1 and 2), for the benches
that time what the stages hand each other."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from grader.course import Course
from grader.demo.sample_class import SAMPLE_CLASSES, write_class
from grader.nbgrader.release import release


def grade_sample_class(assignment: str, work: Path):
    """Yields (task, outcome) for each sample student: stage 1's task (the sanitized notebooks)
    and stage 2's outcome (the executed ones), graded here, one after another."""
    from grader.pipeline.autograde import NotGradable, prepare
    from grader.pipeline.pools import execute

    course = Course(work / "course")
    released = release(course, assignment) / f"{assignment}.ipynb"
    students = SAMPLE_CLASSES[assignment]
    folder = write_class(course.source / assignment / f"{assignment}.ipynb", released, students,
                         work / "submissions", assignment)
    for student in students:
        try:
            task, _ = prepare(course, assignment, student.id,
                              folder / student.id / assignment, None, False)
        except NotGradable as e:
            raise SystemExit(f"{student.id} could not be prepared: {e}") from None
        yield task, execute(task)


def arguments(doc: str, argv: list[str]):
    """The command line these benches share: an assignment, how many passes."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("assignment", nargs="?", default="self_attention")
    p.add_argument("--repeats", type=int, default=20)
    return p.parse_args(argv)


def cpu_of(fn, items: list, repeats: int) -> list[float]:
    """CPU seconds of fn over every item, once per repeat."""
    runs = []
    for _ in range(repeats):
        start = time.process_time()
        for item in items:
            fn(item)
        runs.append(time.process_time() - start)
    return runs
