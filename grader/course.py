"""Where the course lives on disk, and the nbgrader configuration that drives it.

The nbgrader course directory is generated under build/ (ignored by git). Its `source/` is a
link to the repository's `assignments/`, so the source notebooks stay where authors edit them.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

from traitlets.config import Config

REPO = Path(__file__).resolve().parent.parent
COURSE_ID = "attention-course"

# Per-cell time limit when autograding (seconds). Training cells in later assignments may need
# more; an assignment can override it in its own config (see `nbgrader_config`).
CELL_TIMEOUT = 120

# Arguments for every kernel we start: keep its start-up log out of the user's terminal.
KERNEL_ARGS = ["--IPKernelApp.log_level=ERROR"]


def setup_process(gradebook: bool = True) -> None:
    """Make nbgrader work from any caller, and silence noise a course user cannot act on.
    `gradebook`: this process opens the gradebook (a grading pool's processes never do, and
    importing SQLAlchemy for its warning class would cost each of them 0.1 s of CPU)."""
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


@dataclass(frozen=True)
class Course:
    """Paths of one nbgrader course directory (root) fed from a source directory."""

    root: Path
    source: Path = REPO / "assignments"
    db: str | None = None  # a database URL for the gradebook; default: SQLite in root
    # nbgrader's exchange, shared with the students (on a hub); default: one inside root
    shared_exchange: Path | None = None

    @property
    def release(self) -> Path:
        return self.root / "release"

    @property
    def submitted(self) -> Path:
        return self.root / "submitted"

    @property
    def autograded(self) -> Path:
        return self.root / "autograded"

    @property
    def feedback(self) -> Path:
        return self.root / "feedback"

    @property
    def exchange(self) -> Path:
        # Without a shared one, a writable exchange inside the course, so nbgrader never
        # reaches for /usr/local/share/nbgrader/exchange.
        return self.shared_exchange or self.root / "exchange"

    @property
    def has_gradebook(self) -> bool:
        return self.db is not None or (self.root / "gradebook.db").exists()

    @property
    def db_url(self) -> str:
        return self.db or f"sqlite:///{self.root / 'gradebook.db'}"

    @classmethod
    def at(cls, root: Path) -> Course:
        """The course at `root`, its sources where its `source/` points (`prepare` made it)
        when it has one (a hub's course links its own copy), else the repository's."""
        source = root / "source"
        return cls(root, source=source.resolve()) if source.is_dir() else cls(root)

    def prepare(self) -> Course:
        """Create the directory skeleton and link `source` to the assignments."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.shared_exchange is None:
            self.exchange.mkdir(exist_ok=True)
        link = self.root / "source"
        if link.is_symlink() and link.resolve() != self.source.resolve():
            link.unlink()
        if not link.exists():
            link.symlink_to(self.source.resolve(), target_is_directory=True)
        return self

    def assignments(self) -> list[str]:
        return sorted(p.parent.name for p in self.source.glob("*/*.ipynb")
                      if ".ipynb_checkpoints" not in p.parts)

    def notebooks(self, assignment: str) -> list[str]:
        return sorted(p.stem for p in (self.source / assignment).glob("*.ipynb"))


DEFAULT_COURSE = Course(REPO / "build" / "course")


def nbgrader_config(course: Course, cell_timeout: int = CELL_TIMEOUT,
                    limits: dict | None = None) -> Config:
    """The nbgrader configuration for `course`: nbgrader's own pipeline plus our steps."""
    from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import (
        AssignLatePenalties,
        ClearHiddenTests,
        ClearOutput,
        DeduplicateIds,
        IgnorePattern,
        LimitOutput,
        OverwriteKernelspec,
    )

    from grader.html_safety import exporter_config
    from grader.late import LateRule
    from grader.preprocessors import (
        CheckCellMetadata,
        FeedbackGrades,
        OverwriteCellsOnce,
        SaveAutoGradesOnce,
        ShortTracebacks,
        StderrIsNotFailure,
    )
    from grader.sandbox.execute import LoadExecuted, RestoreCells

    c = Config()
    c.CourseDirectory.root = str(course.root)
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.db_url = course.db_url
    c.Exchange.root = str(course.exchange)
    # Collect trusts the file system, not the student, for who submitted and when.
    c.ExchangeFactory.collect = "grader.collect.VerifiedCollect"
    c.NbGraderAPI.log_level = "ERROR"
    c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    # nbconvert validates a notebook against its schema after all of a pass's steps (its own
    # setting), not after each of them (seven in autograde): what is written is checked all
    # the same, and recording a notebook validates it 4 times instead of 10.
    c.Exporter.optimistic_validation = True
    c.Execute.timeout = cell_timeout
    c.Execute.interrupt_on_timeout = True
    # The kernel warns on every start that TCP is unencrypted (it listens on loopback only).
    c.Execute.extra_arguments = KERNEL_ARGS
    # nbgrader's autograde pipeline with three changes. Before execution, RestoreCells puts
    # deleted or re-labelled instructor cells back. Execution is ours (LoadExecuted takes the
    # notebook executed by grader.parallel: the student's code in a sandboxed process, every
    # test's verdict reached in the grader's, see grader/sandbox). After it, warnings that torch
    # prints to stderr must not cost a correct answer its points (nbgrader issue #1904).
    c.RestoreCells.course_root = c.LoadExecuted.course_root = str(course.root)
    c.LoadExecuted.limits = {"cell_timeout": cell_timeout, **(limits or {})}
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
    # (`release --late-penalty`, kept in the course directory): grader/late.py.
    c.AssignLatePenalties.plugin_class = "grader.late.LatePenalty"
    c.LatePenalty.course_root = c.LateRule.course_root = str(course.root)
    # Feedback must not show the hidden tests (nbgrader issue #917): drop their code and
    # shorten tracebacks (which would quote it) to the message written for the student.
    c.GenerateFeedback.preprocessors = [
        FeedbackGrades,  # nbgrader's GetGrades, and each graded cell's name and state
        LateRule,  # how late, and the rule that took points (grader/late.py)
        ClearHiddenTests,
        ShortTracebacks,
        CSSHTMLHeaderPreprocessor,
    ]
    # Every page built from a submission (feedback, the formgrader's submission view) renders
    # student markdown and HTML through an allow-list sanitizer, math as MathML, under a
    # Content-Security-Policy that runs no script of theirs: grader/html_safety.py.
    c.merge(exporter_config())
    return c
