"""Our steps in nbgrader's preprocessor pipelines (configured in grader.nbgrader.config): the
sanitizing ones (RestoreCells, OverwriteCellsOnce, CheckCellMetadata), the recording ones
(SaveAutoGradesOnce, StderrIsNotFailure) and the feedback's (FeedbackGrades, ShortTracebacks).
The execute step, LoadExecuted, is grader/nbgrader/execute.py."""

import copy
import functools
import re
import traceback
from pathlib import Path

import fastjsonschema
import jsonschema
import nbformat
from nbgrader import preprocessors as nbgrader_preprocessors
from nbgrader.nbgraderformat import ValidationError
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.nbgraderformat.v3 import MetadataValidatorV3
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from grader.cells import is_test_cell
from grader.record import flag
from grader.startup.notebook_rows import NotebookRows


class StderrIsNotFailure(NbGraderPreprocessor):
    """Turn stderr text into stdout text, so only a raised error fails a test cell.

    nbgrader gives zero to any cell that wrote to stderr (its issue #1904); torch and numpy
    warnings go there, so a correct answer could lose its points. The text is kept, only its
    stream changes.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code":
            for output in cell.outputs:
                if output.output_type == "stream" and output.name == "stderr":
                    output.name = "stdout"
        return cell, resources


class ShortTracebacks(NbGraderPreprocessor):
    """In test cells, replace a traceback by its last line: the message meant for the student.

    A full traceback quotes the hidden test code it passed through.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if is_test_cell(cell):
            for output in cell.outputs:
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


class _RowsOnce:
    """For nbgrader's steps that look up one cell's row at a time (self.gradebook, opened by
    their preprocess): the notebook's rows are read once (NotebookRows)."""

    def preprocess_cell(self, cell, resources, cell_index):
        if not isinstance(self.gradebook, NotebookRows):
            info = resources["nbgrader"]
            self.gradebook = NotebookRows(self.gradebook, info["notebook"], info["assignment"],
                                          info.get("student"))
        return super().preprocess_cell(cell, resources, cell_index)


class OverwriteCellsOnce(_RowsOnce, nbgrader_preprocessors.OverwriteCells):
    """nbgrader's OverwriteCells, the same checks and changes, the notebook's rows read once."""


class SaveAutoGradesOnce(_RowsOnce, nbgrader_preprocessors.SaveAutoGrades):
    """nbgrader's SaveAutoGrades, the same rows, read once (_RowsOnce) and written in one
    transaction per notebook.

    nbgrader commits after each graded cell (about thirty commits a notebook, each a flush, an
    expiry of every loaded row and a disk sync); here those commits wait, and the notebook's
    last cell commits them all, in one flush. Nothing is lost meanwhile: the gradebook's
    session flushes what is pending before any query it runs (autoflush), and the rows these
    steps change are the session's own (NotebookRows reads a submission's grades and comments
    together, so no query comes between two changes; its gain is in docs/performance.md's
    table). A notebook that fails half-way leaves no
    partial grades behind: nothing is committed, and the submission is graded again next run.
    """

    def preprocess(self, nb, resources):
        self._last_cell = len(nb.cells) - 1
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        db = self.gradebook.db
        db.commit = _later  # what nbgrader's steps call after each cell
        try:
            cell, resources = super().preprocess_cell(cell, resources, cell_index)
        finally:
            del db.commit
        if cell_index == self._last_cell:
            db.commit()
        return cell, resources


def _later() -> None:
    """A commit that waits for the notebook's last cell (SaveAutoGradesOnce)."""


class _SchemaOnce(BaseMetadataValidator):
    """nbgrader's per-cell schema check with the schema's validator built once per process:
    `jsonschema.validate`, which nbgrader calls for every cell, checks the schema itself at
    each call. A cell the schema accepts is let through by a compiled validator
    (fastjsonschema, which nbformat uses for notebooks); any other goes to jsonschema's, which
    raises nbgrader's own error."""

    _checkers: dict = {}

    def validate_cell(self, cell) -> None:
        if "nbgrader" not in cell.metadata:
            return
        version = cell.metadata["nbgrader"].get("schema_version", 0)
        if version != self.schema_version:  # nbgrader's own errors for both directions
            return super().validate_cell(cell)
        checkers = self._checkers.get(self.schema_version)
        if checkers is None:
            cls = jsonschema.validators.validator_for(self.schema)
            cls.check_schema(self.schema)
            checkers = self._checkers[self.schema_version] = (
                fastjsonschema.compile(self.schema, use_default=False),  # fills in nothing
                cls(self.schema))
        fast, checker = checkers
        try:
            fast(cell.metadata["nbgrader"])
        except fastjsonschema.JsonSchemaException:
            checker.validate(cell.metadata["nbgrader"])  # raises jsonschema's error


class _MetadataValidator(MetadataValidatorV3, _SchemaOnce):
    """nbgrader's validator (every rule of its v3), with the schema step above."""


class CheckCellMetadata(nbgrader_preprocessors.CheckCellMetadata):
    """nbgrader's CheckCellMetadata, the same rules and errors, with the validator above."""

    def preprocess(self, nb, resources):
        try:
            _MetadataValidator().validate_nb(nb)
        except ValidationError:
            self.log.error(traceback.format_exc())
            message = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(message)
            raise ValidationError(message) from None
        return nb, resources


class FeedbackGrades(nbgrader_preprocessors.GetGrades):
    """nbgrader's GetGrades, and for the feedback page what a student needs to read each graded
    cell: a name (`title`), and its state, in cell.metadata.grader_feedback (set on every
    cell, so no submission can bring its own):

    - "passed", "failed" or "partial": a test, by its score;
    - "ungraded": a written (or hand-graded) answer that has neither a hand-given nor an
      automatic score yet; nbgrader would show it as 0 / N;
    - "graded": an answer with its score.

    A test is named by its first comment line, the way the notebooks describe each test
    ("# 2 points: weights are distributions; ...", without the points), else by its grade_id
    in words; a written answer by the question above it.
    """

    def preprocess(self, nb, resources):
        nb, resources = super().preprocess(nb, resources)
        for index, cell in enumerate(nb.cells):
            state = cell.metadata.pop("grader_feedback_state", None)
            cell.metadata.pop("grader_feedback", None)
            if state is not None:
                above = nb.cells[index - 1].source if index > 0 else ""
                cell.metadata["grader_feedback"] = {"title": feedback_title(cell, above),
                                                    "state": state}
        return nb, resources

    def preprocess_cell(self, cell, resources, cell_index):
        cell.metadata.pop("grader_feedback_state", None)  # only ours, from _get_score
        return super().preprocess_cell(cell, resources, cell_index)

    def _get_score(self, cell, resources):
        super()._get_score(cell, resources)
        grade = self.gradebook.find_grade(cell.metadata["nbgrader"]["grade_id"],
                                          self.notebook_id, self.assignment_id, self.student_id)
        if grade.manual_score is None and grade.auto_score is None:
            state = "ungraded"
        elif is_test_cell(cell):
            score, points = grade.score or 0, grade.max_score or 0
            state = "passed" if score >= points else ("failed" if score <= 0 else "partial")
        else:
            state = "graded"
        cell.metadata["grader_feedback_state"] = state


_POINTS = re.compile(r"^\d+(?:\.\d+)?\s+points?\b\s*(\((?P<note>[^)]*)\))?\s*:\s*", re.I)


def feedback_title(cell, above: str = "") -> str:
    """A graded cell's name for its student (FeedbackGrades)."""
    meta = cell.metadata.get("nbgrader", {})
    words = re.sub(r"^test_", "", meta.get("grade_id", "")).replace("_", " ").strip()
    if is_test_cell(cell):
        comment = []
        for line in cell.source.splitlines():
            if not line.startswith("#") or line.startswith("###"):
                break
            comment.append(line.lstrip("#").strip())
        text = " ".join(comment).strip()
        found = _POINTS.match(text)
        hidden = bool(found and "hidden" in (found.group("note") or "").lower())
        text = text[found.end():] if found else text
        return f"{'Hidden test' if hidden else 'Test'}: {_shortened(text or words)}"
    if cell.cell_type == "markdown":
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", above) if p.strip()]
        question = paragraphs[-1] if paragraphs else ""
        lead = re.match(r"^\*\*(?P<lead>[^*]+)\*\*\s*(?P<rest>.*)", question, re.S)
        if lead:
            name = re.sub(r"\s*\([^)]*\bpoints?\)", "", lead.group("lead")).rstrip(" .:")
            first = re.split(r"(?<=[.?!])\s", " ".join(lead.group("rest").split()))[0]
            return f"Written answer: {name}" + (f": {_shortened(first)}" if first else "")
        return f"Written answer: {words}"
    return f"{'Task' if meta.get('task') else 'Answer'}: {words}"


def _shortened(text: str, width: int = 90) -> str:
    """One line of at most `width` characters; never cut inside $math$ or `code`."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    text = text[:width - 1]
    for mark in ("$", "`"):
        if text.count(mark) % 2:
            text = text[:text.rindex(mark)]
    return text.rstrip() + "…"


FLAGS = "grader_flags"  # where our steps put their flags in nbgrader's `resources`


class _CourseStep(NbGraderPreprocessor):
    course_root = Unicode("", help="the course directory (for release files and flags)").tag(
        config=True)

    def _where(self, resources):
        info = resources["nbgrader"]
        return info["assignment"], info["student"], info["notebook"]

    def _released(self, resources):
        assignment, _, notebook = self._where(resources)
        path = Path(self.course_root) / "release" / assignment / f"{notebook}.ipynb"
        return copy.deepcopy(_read_released(str(path), path.stat().st_mtime_ns))

    def _flag(self, resources, kind, detail):
        resources.setdefault(FLAGS, []).append(flag(kind, detail))


@functools.lru_cache(maxsize=16)
def _read_released(path: str, mtime_ns: int):
    """The released notebook (read once per grading run, not once per student)."""
    return nbformat.read(path, as_version=4)


def _grade_id(cell):
    return cell.metadata.get("nbgrader", {}).get("grade_id")


class RestoreCells(_CourseStep):
    """Put the instructor's cells back as released: deleted ones re-inserted, metadata reset,
    unknown or duplicated grade ids stripped. (nbgrader's OverwriteCells then restores the
    sources of test and read-only cells, hidden tests included.)"""

    def preprocess(self, nb, resources):
        released = self._released(resources)
        reference = {_grade_id(c): c for c in released.cells if _grade_id(c)}
        seen, cells = set(), []
        for cell in nb.cells:
            gid = _grade_id(cell)
            if gid is None:
                cell.metadata.pop("nbgrader", None)
            elif gid not in reference or gid in seen:
                why = "a second cell with" if gid in seen else "a cell with an unknown"
                if cell.metadata["nbgrader"].get("grade") or gid in seen:
                    self._flag(resources, "metadata",
                               f"{why} grade id {gid!r} was not graded")
                cell.metadata.pop("nbgrader")
            else:
                seen.add(gid)
                ref = reference[gid]
                if cell.metadata["nbgrader"] != ref.metadata["nbgrader"]:
                    self._flag(resources, "metadata",
                               f"the nbgrader metadata of {gid!r} was changed; restored")
                cell.metadata["nbgrader"] = copy.deepcopy(ref.metadata["nbgrader"])
                if cell.cell_type != ref.cell_type:
                    self._flag(resources, "metadata", f"cell {gid!r} changed type; restored")
                    cell = _like(ref, cell.source)
                elif is_test_cell(ref) and not _same_visible(cell, ref):
                    self._flag(resources, "restored", f"test cell {gid!r} was edited; restored")
            cells.append(cell)
        # re-insert deleted instructor cells after the cell that precedes them in the release
        order = [_grade_id(c) for c in released.cells]
        for i, gid in enumerate(order):
            if gid is None or gid in seen:
                continue
            kind = "test cell" if is_test_cell(reference[gid]) else "cell"
            self._flag(resources, "restored", f"{kind} {gid!r} was deleted; restored")
            before = next((g for g in reversed(order[:i]) if g in seen), None)
            at = next((j + 1 for j, c in enumerate(cells) if before and _grade_id(c) == before),
                      0)
            cells.insert(at, copy.deepcopy(reference[gid]))
            seen.add(gid)
        nb.cells = cells
        return nb, resources


def _like(ref, source):
    cell = copy.deepcopy(ref)
    cell.source = source
    return cell


def _same_visible(cell, ref) -> bool:
    """The visible part of a released test cell (before any hidden-test marker) is unchanged."""
    return cell.source.strip() == ref.source.strip()
