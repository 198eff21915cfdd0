"""Stage 1 of grading, in the main process: each submitted notebook made safe to execute by
nbgrader's own sanitizing steps (the list its autograde runs: ClearOutput, our RestoreCells,
DeduplicateIds, OverwriteKernelspec, OverwriteCells from the gradebook (its rows read once),
CheckCellMetadata)."""

from __future__ import annotations

import nbformat

from grader.course import COURSE_ID, Course
from grader.nbgrader.config import nbgrader_config
from grader.nbgrader.execute import SANITIZED_FROM, digest
from grader.nbgrader.preprocessors import FLAGS
from grader.notebooks import handover
from grader.submission import Flag, unique


def sanitize(course: Course, assignment: str, student: str) -> tuple[dict[str, str], list[Flag]]:
    """({notebook: sanitized notebook JSON}, flags) for one student's intake copy."""
    config = nbgrader_config(course)
    steps = [step(config=config) for step in config.Autograde.sanitize_preprocessors]
    folder = course.submitted / student / assignment
    notebooks, flags = {}, []
    for name in course.notebooks(assignment):
        data = (folder / f"{name}.ipynb").read_bytes()
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        resources = {"nbgrader": {"db_url": course.db_url, "course_id": COURSE_ID,
                                  "assignment": assignment, "student": student,
                                  "notebook": name}}
        for step in steps:
            nb, resources = step.preprocess(nb, resources)
        flags += resources.get(FLAGS, [])
        # stage 3 takes the executed notebook whole, if made from this very file
        nb.metadata[SANITIZED_FROM] = digest(data)
        notebooks[name] = handover(nb)
    return notebooks, unique(flags)
