"""nbgrader's configuration for a course, as data: its pipelines with our steps in them, its
exchange, its late-penalty plugin and its pages' sanitizer; and the set-up every process that
runs nbgrader needs.

Importing this module imports nothing of nbgrader (the steps are imported when a configuration
is built), so a grading pool's processes may call `setup_process`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import warnings
from pathlib import Path

from traitlets.config import Config

from grader.course import COURSE_ID, KERNEL_ARGS, Course
from grader.submission import Limits


def setup_process(gradebook: bool = True) -> None:
    """Make nbgrader work from any caller, and silence noise a course user cannot act on.
    `gradebook`: this process opens the gradebook (a grading pool's processes never do, and
    importing SQLAlchemy for its warning class would add to each one's start-up)."""
    # nbgrader runs the `alembic` command when it creates a gradebook: it must be found even
    # when this interpreter was started by path (.venv/bin/python) without activating .venv.
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
    os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")  # jupyter_core's path-migration notice
    if gradebook:
        from sqlalchemy.exc import SAWarning

        warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader: one per submission
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*TCP.*encryption.*")
    for name in ("traitlets", "nbgrader", "jupyter_client", "nbclient", "NbGraderAPI"):
        logging.getLogger(name).setLevel(logging.ERROR)


def nbgrader_config(course: Course, limits: Limits | None = None) -> Config:
    """The nbgrader configuration for `course`: nbgrader's own pipeline plus our steps."""
    from grader.html_safety import exporter_config

    limits = limits or Limits()
    c = Config()
    _course_directory(c, course)
    _execution(c, limits)
    _autograde_pipeline(c, course, limits)
    _feedback_pipeline(c, course)
    # Every page built from a submission (feedback, the formgrader's submission view) renders
    # student markdown and HTML through an allow-list sanitizer, math as MathML, under a
    # Content-Security-Policy that runs no script of theirs: grader/html_safety.py.
    c.merge(exporter_config())
    return c


def _course_directory(c: Config, course: Course) -> None:
    """Where the course, its gradebook and its exchange are, and nbgrader's own settings."""
    c.CourseDirectory.root = str(course.root)
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.db_url = course.db_url
    c.Exchange.root = str(course.exchange)
    # Collect trusts the file system, not the student, for who submitted and when.
    c.ExchangeFactory.collect = "grader.nbgrader.collect.VerifiedCollect"
    c.NbGraderAPI.log_level = "ERROR"
    c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    # nbconvert validates a notebook against its schema after all of a pass's steps (its own
    # setting), not after each of them (seven in autograde): what is written is checked all
    # the same, and recording a notebook validates it 4 times instead of 10.
    c.Exporter.optimistic_validation = True


def _execution(c: Config, limits: Limits) -> None:
    """nbgrader's own execution (the formgrader's Autograde button without a notebook executed
    in stage 2): its limits, its kernel quiet."""
    c.Execute.timeout = limits.cell_timeout
    c.Execute.interrupt_on_timeout = True
    # The kernel warns on every start that TCP is unencrypted (it listens on loopback only).
    c.Execute.extra_arguments = KERNEL_ARGS


def _autograde_pipeline(c: Config, course: Course, limits: Limits) -> None:
    """nbgrader's autograde pipeline with three changes. Before execution, RestoreCells puts
    deleted or re-labelled instructor cells back. Execution is ours (LoadExecuted takes the
    notebook executed by grader.pipeline.pools: the student's code in a sandboxed process, every
    test's verdict reached in the grader's, see grader/sandbox). After it, warnings that torch
    prints to stderr must not cost a correct answer its points (nbgrader issue #1904). Three of
    nbgrader's steps are its own made faster (grader/nbgrader/patches.py)."""
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.preprocessors import (
        AssignLatePenalties,
        ClearOutput,
        DeduplicateIds,
        IgnorePattern,
        LimitOutput,
        OverwriteKernelspec,
    )

    from grader.nbgrader.execute import LoadExecuted
    from grader.nbgrader.patches import CheckCellMetadata, OverwriteCellsOnce, SaveAutoGradesOnce
    from grader.nbgrader.preprocessors import RestoreCells, StderrIsNotFailure

    c.RestoreCells.course_root = c.LoadExecuted.course_root = str(course.root)
    c.LoadExecuted.limits = dataclasses.asdict(limits)  # (configuration is data)
    c.Autograde.sanitize_preprocessors = [
        ClearOutput,
        RestoreCells,
        DeduplicateIds,
        OverwriteKernelspec,
        OverwriteCellsOnce,
        CheckCellMetadata,
    ]
    c.Autograde.autograde_preprocessors = [
        LoadExecuted,
        IgnorePattern,
        StderrIsNotFailure,
        ClearMetadataPreprocessor,
        LimitOutput,
        SaveAutoGradesOnce,
        AssignLatePenalties,
        CheckCellMetadata,
    ]
    # nbgrader's late-penalty step with the instructor's rule for the assignment
    # (`release --late-penalty`, kept in the course directory): grader/nbgrader/late.py.
    c.AssignLatePenalties.plugin_class = "grader.nbgrader.late.LatePenalty"
    c.LatePenalty.course_root = str(course.root)


def _feedback_pipeline(c: Config, course: Course) -> None:
    """Feedback must not show the hidden tests (nbgrader issue #917): drop their code and
    shorten tracebacks (which would quote it) to the message written for the student."""
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import ClearHiddenTests

    from grader.nbgrader.late import LateRule
    from grader.nbgrader.preprocessors import FeedbackGrades, ShortTracebacks

    c.GenerateFeedback.preprocessors = [
        FeedbackGrades,  # nbgrader's GetGrades, and each graded cell's name and state
        LateRule,  # how late, and the rule that took points (grader/nbgrader/late.py)
        ClearHiddenTests,
        ShortTracebacks,
        CSSHTMLHeaderPreprocessor,
    ]
    c.LateRule.course_root = str(course.root)
