"""Our execute step in nbgrader's autograde pipeline, and what the execution needs.

Grading has three stages (grader/pipeline/autograde.py): sanitize (nbgrader's own steps with
ours, grader/nbgrader/preprocessors.py, in the main process), execute (grader.judge.run's
`run_notebook`, in a pool process: the student's cells in the sandbox, the tests in the
grader's process), record (nbgrader's autograde, whose execute step is LoadExecuted: it takes
stage 2's notebook and refuses one not made from the submission it records). `plan` gathers
what stage 2 needs, as data."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import nbformat
from traitlets import Bool, Dict

from grader.cells import is_solution
from grader.files import regular_files
from grader.judge import answers
from grader.judge.run import run_notebook
from grader.metadata import limits_in, modules_in
from grader.nbgrader.preprocessors import _CourseStep
from grader.submission import Flag, Limits, Plan, flag

# Names a student's files may not take: they would shadow the packages the notebook imports.
PROTECTED = {"grader", "solutions", "torch", "numpy", "IPython", "nbgrader", "math"}


def plan(course_root: Path, assignment: str, student: str, limits: Limits | None = None) -> Plan:
    """What the execution of one submission needs (grader.submission.Plan): its scratch files,
    each notebook's answers, limits (`limits`, with what the assignment's metadata sets over
    them) and what the students' processes import."""
    root = Path(course_root)
    flags: list[Flag] = []
    files = scratch_files(root / "submitted" / student / assignment,
                          root / "release" / assignment, flags)
    answers_, per_notebook, preload = {}, {}, []
    for path in sorted((root / "source" / assignment).glob("*.ipynb")):
        declared, own_limits, wanted = _source_facts(path.read_bytes())
        answers_[path.stem] = list(declared)
        per_notebook[path.stem] = (limits or Limits()).updated(own_limits)  # the assignment's wins
        preload += [m for m in wanted if m not in preload]
    return Plan(files, answers_, per_notebook, flags, preload)


@functools.lru_cache(maxsize=16)
def _source_facts(data: bytes) -> tuple[tuple[str, ...], dict, tuple[str, ...]]:
    """What a plan takes from the instructor's notebook (its file's bytes): the names its
    solution cells define, its own limits, and what it declares the students' processes import
    (grader.pipeline.pools.sandbox_preload_for); worked out once per grading process, not once per
    student (callers never change them)."""
    source = nbformat.reads(data.decode("utf-8"), as_version=4)
    declared = answers.declared(
        [c.source for c in source.cells if c.cell_type == "code" and is_solution(c)])
    return (tuple(sorted(declared)), limits_in(source.metadata),
            tuple(modules_in(source.metadata, "sandbox_preload")))


def executed_path(course_root: Path, assignment: str, student: str, notebook: str) -> Path:
    """Where stage 2 leaves an executed notebook for nbgrader's autograde to record."""
    return Path(course_root) / "executed" / assignment / student / f"{notebook}.ipynb"


class ExecutedMismatchError(RuntimeError):
    """The executed notebook is not the notebook nbgrader is recording."""


SANITIZED_FROM = "grader_sanitized_from"  # notebook metadata: sha256 of the file sanitized


def digest(data: bytes) -> str:
    """What stage 1 writes under SANITIZED_FROM: the submitted file's SHA-256."""
    return hashlib.sha256(data).hexdigest()


def _mismatch(notebook: str) -> ExecutedMismatchError:
    return ExecutedMismatchError(
        f"the executed copy of {notebook}.ipynb does not match the submission nbgrader is "
        "recording (the grader's fault; run autograde again)")


class LoadExecuted(_CourseStep):
    """nbgrader's execute step, ours: take the outputs of the notebook executed in stage 2
    (`executed_path`), refusing one whose cells differ from what nbgrader sanitized; with
    `presanitized` (grader.pipeline.autograde's recording), the executed notebook whole, refusing
    one not made from the submitted file as it is now. With none there (the formgrader's Autograde
    button), execute it here, the same confined way."""

    unconfined = Bool(False, help="grade even where the sandbox cannot be built (every "
                      "submission is flagged 'unconfined')").tag(config=True)
    limits = Dict({}, help="the fields of the run's Limits (grader.submission); an "
                  "assignment's metadata overrides them").tag(config=True)
    presanitized = Bool(False, help="the executed notebook was sanitized in stage 1 "
                        "(grader.pipeline.sanitize) and nbgrader's own sanitizing pass was left "
                        "out: take it whole, if it was made from the submitted file as it is "
                        "now").tag(config=True)

    def preprocess(self, nb, resources):
        assignment, student, notebook = self._where(resources)
        path = executed_path(self.course_root, assignment, student, notebook)
        if self.presanitized:
            submitted = Path(self.course_root) / "submitted" / student / assignment / \
                f"{notebook}.ipynb"
            return _take_presanitized(path, submitted, notebook), resources
        if path.exists():
            executed = nbformat.read(path, as_version=4)
            if not _take_outputs(nb, executed):
                raise _mismatch(notebook)
            return nb, resources
        p = plan(self.course_root, assignment, student, Limits(**self.limits))
        for f in p.flags + run_notebook(nb, notebook, p, self.unconfined):
            self._flag(resources, f["kind"], f["detail"])
        return nb, resources


def _take_presanitized(path: Path, submitted: Path, notebook: str):
    """Stage 2's notebook whole, if it was made from the submitted file as it is now."""
    executed = nbformat.read(path, as_version=4) if path.exists() else None
    if executed is None or \
            executed.metadata.get(SANITIZED_FROM) != digest(submitted.read_bytes()):
        raise _mismatch(notebook)
    del executed.metadata[SANITIZED_FROM]
    return executed


def scratch_files(submitted: Path, release: Path, flags: list[Flag]) -> dict[str, bytes]:
    """The student's own files, then the released files over them; never a notebook with
    hidden tests in it, never a link. Appends to `flags` what it changed."""
    files: dict[str, bytes] = {}
    for path in regular_files(submitted):
        name = str(path.relative_to(submitted))
        top = name.split("/")[0]
        if top.removesuffix(".py") in PROTECTED:
            flags.append(flag("shadowing", f"submitted {top}, which would hide the real "
                              f"{top.removesuffix('.py')} package; removed"))
            continue
        files[name] = path.read_bytes()
    for path in regular_files(release):
        if path.suffix == ".ipynb":
            continue
        name = str(path.relative_to(release))
        data = path.read_bytes()
        if name in files and files[name] != data:
            flags.append(flag("helper", f"{name} differed from the released file; the "
                              "instructor's copy was used"))
        files[name] = data
    return files


def _take_outputs(nb, executed) -> bool:
    """Copy the outputs of `executed` onto `nb` if it is the same notebook, cell for cell."""
    if len(nb.cells) != len(executed.cells) or any(
            a.cell_type != b.cell_type or a.source != b.source
            for a, b in zip(nb.cells, executed.cells, strict=True)):
        return False
    for a, b in zip(nb.cells, executed.cells, strict=True):
        if a.cell_type == "code":
            a.outputs, a.execution_count = b.outputs, b.execution_count
    return True
