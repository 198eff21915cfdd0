"""One place that builds nbgrader's API object for a course, and reads what its steps say."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory

from grader.course import Course
from grader.nbgrader.config import nbgrader_config, setup_process
from grader.nbgrader.patches import CheckCellMetadata, RecordingAPI, remember_alembic_head

if TYPE_CHECKING:
    from grader.submission import Limits

EXCEPTION_LINE = re.compile(r"^[A-Za-z_.]*(Error|Exception): ")


class NbGraderError(RuntimeError):
    """An nbgrader step failed; the message carries the reason from nbgrader's log."""


def api_for(course: Course, limits: Limits | None = None, unconfined: bool = False,
            recording: bool = False) -> NbGraderAPI:
    """limits: the limits of every notebook (default Limits()); unconfined: the instructor's
    explicit choice to grade without the sandbox; recording: autograde only records notebooks
    grader.pipeline.autograde sanitized and executed (its stage 3, grader.pipeline.grades):
    nbgrader's sanitizing pass, done in stage 1 already, is left out
    (grader.nbgrader.patches.RecordExecuted)."""
    setup_process()
    remember_alembic_head()
    course.prepare()
    config = nbgrader_config(course, limits=limits)
    config.LoadExecuted.unconfined = unconfined
    if recording:
        config.LoadExecuted.presanitized = True
        # no CheckCellMetadata either: the notebook is stage 1's, checked there, outputs added
        config.Autograde.autograde_preprocessors = [
            step for step in config.Autograde.autograde_preprocessors
            if step is not CheckCellMetadata]
    return (RecordingAPI if recording else NbGraderAPI)(CourseDirectory(config=config),
                                                         config=config)


def reason(result: dict) -> str:
    """The most useful line of a failed nbgrader result: the exception it ended with."""
    lines = [line.strip() for line in
             ((result.get("log") or "") + "\n" + (result.get("error") or "")).splitlines()]
    exceptions = [line for line in lines if EXCEPTION_LINE.match(line)
                  and "NbGraderException" not in line]
    if exceptions:
        return exceptions[-1]
    errors = [line.removeprefix("[ERROR]").strip() for line in lines if line.startswith("[ERROR]")]
    return errors[0] if errors else "unknown error (see nbgrader's log)"


def ok(result: dict, step: str) -> dict:
    if not result.get("success"):
        raise NbGraderError(f"{step} failed: {reason(result)}")
    return result
