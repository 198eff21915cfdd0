"""Our steps in nbgrader's preprocessor pipelines (configured in grader.course)."""

import traceback

import fastjsonschema
import jsonschema
from nbgrader import preprocessors as nbgrader_preprocessors
from nbgrader.nbgraderformat import ValidationError
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.nbgraderformat.v3 import MetadataValidatorV3
from nbgrader.preprocessors import NbGraderPreprocessor

from grader.cells import is_test_cell
from grader.notebook_rows import NotebookRows


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
    together, so no query comes between two changes). self_attention: 6 flushes a recorded
    notebook instead of 27; recording took 26.1-29.2 ms against 28.6-31.3 ms of CPU (least and
    median of five alternations of 10 notebooks). A notebook that fails half-way leaves no
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
    each call (about a quarter of the grader's CPU per notebook, measured with cProfile). A
    cell the schema accepts is let through by a compiled validator (fastjsonschema, which
    nbformat uses for notebooks: 1.9 ms a notebook with jsonschema's); any other goes to
    jsonschema's, which raises nbgrader's own error."""

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
