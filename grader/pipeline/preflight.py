"""The grader checks itself before it charges anyone: before a class is graded, the
assignment's source notebook (the instructor's solution, hidden tests and all) is executed in the
same environment, sandbox and limits as the students' notebooks, and scored as nbgrader scores
them (nbgrader.utils.determine_grade). Unless it earns every autograded point, the run stops
before anything is recorded (grader/pipeline/autograde.py raises `PreflightFailed`): a package,
a data file or a limit the grading machine lacks would otherwise cost every student the same
points, with a message that blames them.

A verdict that passed is cached, keyed by what could change it: the source and released files,
this environment (Python, the installed distributions, the grader's and the reference solutions'
code, the few variables that point the notebooks at their data), the sandbox and the limits. A
class graded again in the same environment does not pay for it twice; a failure is never cached
(what was missing may have been installed since).

The cache lives in $XDG_CACHE_HOME/attention-course/preflight/ (default ~/.cache/...; or
$GRADER_PREFLIGHT_CACHE), one small JSON file per key: shared by every course on the machine,
so a new course of the same assignment (the demo, a benchmark, a second section) costs nothing
more.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.cells import is_solution, is_test_cell
from grader.course import Course
from grader.files import folder_hash, write_atomic
from grader.pipeline.held import error_of
from grader.submission import Executed, Limits, Task

log = logging.getLogger(__name__)

# Its key among the students' tasks: no student id can be this (grader.intake.is_student_id).
SOURCE = "(the instructor's solution)"
# The environment's variables that point a notebook at its data (lectures/toolkit/python_docs.py,
# the capstone's data cell) or change which device or kernels it uses.
VARIABLES = ("PYTHON_DOCS_SOURCES", "CUDA_VISIBLE_DEVICES", "ATEN_CPU_CAPABILITY")
_PACKAGES = ("grader", "solutions")  # the code a verdict depends on, beside the notebooks


@dataclass
class Failure:
    """One cell of the source notebook that did not do what it should."""

    notebook: str
    cell: str  # its grade_id, else "cell N" (counted from 1)
    kind: str  # "provided", "answer" (a solution cell), "test", or "grader" (a provided cell
    # that failed on the grader's side, as its flag says: `error` is the flag's detail)
    error: str  # "ExceptionName: its message"
    points: float = 0.0  # a test's points lost


@dataclass
class Verdict:
    """What grading the instructor's solution gave: its autograded score and the cells that
    raised, in the order they ran."""

    score: float
    max_score: float
    failures: list[Failure] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.score >= self.max_score and not self.failures


class PreflightFailed(Exception):
    """The instructor's solution did not earn full marks here: nothing was graded."""

    def __init__(self, assignment: str, source: Path, verdict: Verdict | None, why: str = ""):
        self.assignment, self.source, self.verdict = assignment, source, verdict
        self.lines = describe(assignment, source, verdict, why)
        super().__init__("\n".join(self.lines))


def describe(assignment: str, source: Path, verdict: Verdict | None,
             why: str = "") -> list[str]:
    """The failed preflight in words, for the instructor: the score, the first cell that raised
    (its error usually says what is missing: a path, a package, a variable) and the tests that
    failed."""
    if verdict is None:
        head = f"the instructor's solution of {assignment} ({source}) could not be graded on " \
               f"this machine ({why})"
        return [head + ", so no student was graded.", _AFTER]
    head = (f"the instructor's solution of {assignment} ({source}) earns {verdict.score:g} of "
            f"{verdict.max_score:g} autograded points on this machine, so no student was graded "
            "(each would lose those points for a fault that is not theirs).")
    lines = [head]
    first = next((f for f in verdict.failures if f.kind != "test"), None) or \
        (verdict.failures[0] if verdict.failures else None)
    if first is not None and first.kind == "grader":
        lines.append(f"  first error: {first.error}")
    elif first is not None:
        lines.append(f"  first error: {first.notebook}.ipynb, {_cell_words(first)}: "
                     f"{first.error}")
    tests = [f for f in verdict.failures if f.kind == "test"]
    if tests:
        lines.append("  failing tests: " + ", ".join(
            f"{f.cell} ({f.points:g} point{'s' * (f.points != 1)})" for f in tests))
    lines.append(_AFTER)
    return lines


_AFTER = ("Install what the error names (or fix the source notebook) and run the same command "
          "again; nothing was recorded, no feedback written.")


def _cell_words(f: Failure) -> str:
    what = {"provided": "a cell the assignment provides", "answer": "a solution cell",
            "test": "a test"}[f.kind]
    return f"{f.cell} ({what})"


@dataclass
class Check:
    """One preflight: the task (the source notebooks, executed first in the class's pool) and
    the key its verdict is cached under."""

    course: Course
    assignment: str
    digest: str
    task: Task

    def passed(self, outcome) -> Verdict:
        """The verdict of the task's outcome (grader.submission's Finished, Failed or Stuck),
        cached when it passed; PreflightFailed unless it did."""
        from grader.submission import Failed, Finished, Stuck

        source = self.course.source / self.assignment
        match outcome:
            case Finished(_, executed):
                result = verdict(executed)
                if not result.passed:
                    raise PreflightFailed(self.assignment, source, result)
                remember(self.digest, self.assignment, result)
                return result
            case Failed(_, error):
                raise PreflightFailed(self.assignment, source, None, error)
            case Stuck(_, seconds):
                raise PreflightFailed(self.assignment, source, None,
                                      f"still running after {seconds:.0f} s")
        raise TypeError(f"not an outcome: {outcome!r}")


# ----- the task, and its verdict ------------------------------------------------------------


def task(course: Course, assignment: str, limits: Limits, unconfined: bool) -> Task:
    """The source notebooks as one more submission for stage 2: executed like a student's,
    with the released files beside them."""
    from grader.nbgrader.execute import plan

    notebooks = {name: (course.source / assignment / f"{name}.ipynb").read_text("utf-8")
                 for name in course.notebooks(assignment)}
    work = plan(course.root, assignment, SOURCE, limits)  # no submitted files: released ones
    return Task(assignment, SOURCE, _cleared(notebooks), work, unconfined)


def _cleared(notebooks: dict[str, str]) -> dict[str, str]:
    """The notebooks without outputs (a source saved with them would otherwise keep them)."""
    import nbformat

    from grader.notebooks import handover

    out = {}
    for name, text in notebooks.items():
        nb = nbformat.reads(text, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        out[name] = handover(nb)
    return out


def verdict(executed: Executed) -> Verdict:
    """Score the executed source notebooks as nbgrader's autograde does (determine_grade on
    each autograded test cell), and list each cell that raised."""
    import nbformat
    from nbgrader.utils import determine_grade

    score = max_score = 0.0
    # the instructor's cells that failed on the grader's side (grader.judge.notebook: the tests'
    # copies of the data and helpers), in the flags: usually the first and truest error
    failures = [Failure("", "", "grader", f["detail"]) for f in executed["flags"]
                if f["kind"] == "grader"]
    for name, text in executed["notebooks"].items():
        nb = nbformat.reads(text, as_version=4)
        for index, cell in enumerate(nb.cells, 1):
            if cell.cell_type != "code":
                continue
            error = error_of(cell)
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index}"
            if is_test_cell(cell):
                got, points = determine_grade(cell)
                score, max_score = score + (got or 0.0), max_score + points
                if (got or 0.0) < points:
                    failures.append(Failure(name, grade_id, "test",
                                            error or "scored less than its points",
                                            points - (got or 0.0)))
            elif error is not None:
                kind = "answer" if is_solution(cell) else "provided"
                failures.append(Failure(name, grade_id, kind, error))
    return Verdict(score, max_score, failures)


# ----- the cache ---------------------------------------------------------------------------------


def key(course: Course, assignment: str, limits: Limits, unconfined: bool,
        scheduler: str | None) -> str:
    """What a verdict depends on, hashed."""
    h = hashlib.sha256()
    for part in (folder_hash(course.source / assignment),
                 folder_hash(course.root / "release" / assignment),
                 _environment(), json.dumps(asdict(limits), sort_keys=True),
                 f"unconfined={unconfined}", f"scheduler={scheduler}"):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def _environment() -> str:
    """This Python, its installed distributions (their metadata folders' names: name and
    version), the grader's and the solutions' code, and the data variables."""
    parts = [sys.version, sys.prefix]
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                parts += sorted(e.name for e in it
                                if e.name.endswith((".dist-info", ".egg-info", ".egg-link")))
        except OSError:
            continue
    root = Path(__file__).resolve().parents[2]
    parts += [_code(root / package) for package in _PACKAGES]
    parts += [f"{v}={os.environ.get(v, '')}" for v in VARIABLES]
    return "\n".join(parts)


def _code(folder: Path) -> str:
    """A hash of the Python files under `folder` (not their bytecode, which `make bytecode`
    writes later)."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def cache_folder() -> Path:
    """$GRADER_PREFLIGHT_CACHE, else $XDG_CACHE_HOME/attention-course/preflight, else
    ~/.cache/attention-course/preflight."""
    if os.environ.get("GRADER_PREFLIGHT_CACHE"):
        return Path(os.environ["GRADER_PREFLIGHT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attention-course" / "preflight"


def cached(digest: str) -> bool:
    """Whether a verdict that passed is cached under `digest`."""
    try:
        return json.loads((cache_folder() / f"{digest}.json").read_text()).get("passed") is True
    except (OSError, ValueError, AttributeError):
        return False


def remember(digest: str, assignment: str, result: Verdict) -> None:
    """Cache a verdict that passed (a failure never: what was missing may be installed)."""
    if not result.passed:
        return
    try:
        folder = cache_folder()
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / f"{digest}.json", json.dumps(
            {"assignment": assignment, "passed": True, "score": result.score,
             "max_score": result.max_score}))
    except OSError as e:  # no cache: the next run checks again
        log.debug("preflight verdict not cached: %s", e)
