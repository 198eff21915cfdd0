"""Every change the grader makes to nbgrader's own code, in one place. Written against
nbgrader==0.9.6 (pyproject.toml pins it): each patch relies on internals of that version, named
below, and is the first thing to check when nbgrader changes.

Each one changes how nbgrader does its work, never what it does: the same rows, grades, files
and errors, for less CPU (docs/performance.md measures each). What changes what nbgrader does
(our steps in its pipelines, the collect that trusts the file system, the late-penalty plugin)
is not a patch: it is plugged in through nbgrader's configuration (grader/nbgrader/config.py)
and lives with its job (preprocessors.py, execute.py, collect.py, late.py).

Patched at run time (nbgrader's own objects changed, and put back):

1. `shared_engines()`, for one grading run (grader.pipeline.autograde): nbgrader.api's
   `create_engine`, `inspect`, `Base.metadata.create_all` and `Gradebook.check_course`, so
   that the run's gradebooks share one SQLAlchemy engine per database, list and check their
   tables once, and check their course once. Why: nbgrader opens the gradebook some twenty
   times a recorded notebook, each opening a new engine, a table listing, a check of every
   table and of the course. Relies on: `Gradebook.__init__` calling those four by these names.
2. `remember_alembic_head()` (grader.nbgrader.api.api_for): nbgrader.api's
   `get_alembic_version`, asked once per process through alembic's Python API. Why: nbgrader
   runs the `alembic` command (a new Python process, seconds of CPU) for every new gradebook.
   Relies on: `Gradebook.__init__` stamping a new database with `get_alembic_version()`, and
   `nbgrader.dbutil._temp_alembic_ini`.
3. `commits_deferred(db)` (SaveAutoGradesOnce): the gradebook session's `commit`, a no-op
   while one notebook's cells are recorded; one commit at its last cell. Why: nbgrader commits
   after every graded cell (a flush, an expiry of every loaded row, a disk sync each), and a
   notebook failing half-way would leave half its grades. Relies on: SaveAutoGrades calling
   `self.gradebook.db.commit()`.

Subclasses that replace a part of nbgrader's, configured in its place (config.py, api.py):

4. `OverwriteCellsOnce`, `SaveAutoGradesOnce` (RowsOnce): nbgrader's OverwriteCells and
   SaveAutoGrades, their gradebook (`self.gradebook`, opened by their `preprocess`) replaced by
   grader.startup.notebook_rows.NotebookRows, which reads a notebook's rows once instead of once
   per cell. Relies on: the finders those steps call (`find_source_cell`, `find_graded_cell`,
   `find_grade`, `find_comment`).
5. `CheckCellMetadata` (SchemaOnce): nbgrader's CheckCellMetadata with its metadata validator's
   per-cell schema check compiled once per process. Why: `jsonschema.validate` checks the schema
   itself for every cell. Relies on: `BaseMetadataValidator.validate_cell`, `schema`,
   `schema_version`, and MetadataValidatorV3.
6. `RecordingAPI`, `RecordExecuted`, `RecordingExporter` (api_for(recording=True), stage 3 of
   grading): nbgrader's `NbGraderAPI.autograde` with a converter of one pass instead of two for
   notebooks already sanitized and executed, its exporter skipping the parse of a submission
   that LoadExecuted replaces, and writing compact JSON. Relies on: `Autograde`'s
   `_init_preprocessors`, `exporter._preprocessors`, `BaseConverter.convert_single_notebook`,
   `utils.temp_attrs` and `utils.capture_log`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import traceback

import fastjsonschema
import jsonschema
import nbformat
from nbconvert.exporters import Exporter, NotebookExporter
from nbformat.v4.rwbase import strip_transient
from nbgrader import preprocessors as nbgrader_preprocessors
from nbgrader import utils
from nbgrader.apps import NbGraderAPI
from nbgrader.converters import Autograde
from nbgrader.converters.base import BaseConverter
from nbgrader.nbgraderformat import ValidationError
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.nbgraderformat.v3 import MetadataValidatorV3
from traitlets import default

from grader.startup.notebook_rows import NotebookRows

# ----- 1. one engine per gradebook for a grading run --------------------------------------------


def _keep_connections(close: bool = True) -> None:
    """A shared engine's dispose() during the run: the pool stays for the next gradebook."""


class _Tables:
    """What nbgrader asks an inspector for when it opens a gradebook: the table names."""

    def __init__(self, names: list[str]):
        self.names = names

    def get_table_names(self, *args, **kwargs) -> list[str]:
        return list(self.names)


@contextlib.contextmanager
def shared_engines():
    """Inside, nbgrader's gradebooks reuse one engine per database URL, list its tables until
    they exist and check them once, and keep its connections in its pool until the end; each
    gradebook still closes its own session. A course row is checked (found, or made) once per
    engine: nbgrader checks it at every opening, a query and a commit that are nearly all of an
    opening's cost, some eight openings a recorded notebook."""
    import nbgrader.api
    from sqlalchemy import MetaData

    create, metadata = nbgrader.api.create_engine, nbgrader.api.Base.metadata
    inspect, check_course = nbgrader.api.inspect, nbgrader.api.Gradebook.check_course
    engines, checked, courses = {}, set(), set()
    tables = {}  # shared engine -> its tables, once there are some (a run never drops one)

    def create_engine(url, **kwargs):
        key = (str(url), tuple(sorted(kwargs.items())))
        if key not in engines:
            engines[key] = create(url, **kwargs)
            engines[key].dispose = _keep_connections
        return engines[key]

    def create_all(bind, **kwargs):
        if bind not in checked:
            MetaData.create_all(metadata, bind=bind, **kwargs)
            checked.add(bind)

    def inspect_tables(engine):
        if engine in tables:
            return _Tables(tables[engine])
        names = inspect(engine).get_table_names()
        if names and engine in engines.values():
            tables[engine] = names
        return _Tables(names)

    def check_course_once(gradebook, course_id="default_course", **kwargs):
        """nbgrader's check, the first time a shared engine's gradebook asks for a course; later
        openings skip it (its one caller, Gradebook.__init__, discards the row it returns): a
        run deletes no course."""
        key = (gradebook.engine, course_id)
        if key in courses and not kwargs:
            return None
        course = check_course(gradebook, course_id, **kwargs)
        if gradebook.engine in engines.values():
            courses.add(key)
        return course

    nbgrader.api.create_engine, metadata.create_all = create_engine, create_all
    nbgrader.api.inspect = inspect_tables
    nbgrader.api.Gradebook.check_course = check_course_once
    try:
        yield
    finally:
        nbgrader.api.create_engine, nbgrader.api.inspect = create, inspect
        nbgrader.api.Gradebook.check_course = check_course
        del metadata.create_all
        for engine in engines.values():
            del engine.dispose
            engine.dispose()


# ----- 2. the head of nbgrader's migrations, asked once ------------------------------------------


def alembic_heads() -> list[str]:
    """The heads of nbgrader's database migrations, from alembic's Python API with nbgrader's
    own alembic.ini (the question nbgrader's `get_alembic_version` puts to the `alembic`
    command)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:  # nbgrader's own arguments
        return list(ScriptDirectory.from_config(Config(ini)).get_heads())


def remember_alembic_head() -> None:
    """nbgrader stamps each gradebook it creates with the head of its migrations, which it asks
    the `alembic` command for: a new Python process for every new gradebook, seconds of CPU.
    From here on this process asks alembic's Python API instead (most of its cost is importing
    alembic), once; where that finds more than one head,
    nbgrader's own way, once."""
    import nbgrader.api

    if getattr(nbgrader.api.get_alembic_version, "remembered", False):
        return
    nbgraders_way = nbgrader.api.get_alembic_version

    @functools.cache
    def head() -> str:
        heads = alembic_heads()
        return heads[0] if len(heads) == 1 else nbgraders_way()

    head.remembered = True
    nbgrader.api.get_alembic_version = head


# ----- 3, 4. a notebook's rows read once, its grades committed once ------------------------------


class RowsOnce:
    """For nbgrader's steps that look up one cell's row at a time (self.gradebook, opened by
    their preprocess): the notebook's rows are read once (NotebookRows)."""

    def preprocess_cell(self, cell, resources, cell_index):
        if not isinstance(self.gradebook, NotebookRows):
            info = resources["nbgrader"]
            self.gradebook = NotebookRows(self.gradebook, info["notebook"], info["assignment"],
                                          info.get("student"))
        return super().preprocess_cell(cell, resources, cell_index)


class OverwriteCellsOnce(RowsOnce, nbgrader_preprocessors.OverwriteCells):
    """nbgrader's OverwriteCells, the same checks and changes, the notebook's rows read once."""


class SaveAutoGradesOnce(RowsOnce, nbgrader_preprocessors.SaveAutoGrades):
    """nbgrader's SaveAutoGrades, the same rows, read once (RowsOnce) and written in one
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
        with commits_deferred(db):
            cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if cell_index == self._last_cell:
            db.commit()
        return cell, resources


@contextlib.contextmanager
def commits_deferred(db):
    """Inside, the gradebook session `db`'s commit() does nothing (nbgrader's steps call it
    after each cell); the caller commits once, when it is done (SaveAutoGradesOnce)."""
    db.commit = _later
    try:
        yield
    finally:
        del db.commit


def _later() -> None:
    """A commit that waits for the notebook's last cell (SaveAutoGradesOnce)."""


# ----- 5. the cell metadata's schema compiled once ---------------------------------------------


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


# ----- 6. stage 3 in one pass ------------------------------------------------------------------


class RecordingExporter(NotebookExporter):
    """nbconvert's notebook exporter, for RecordExecuted: the submitted file is not parsed
    when the first step is LoadExecuted taking stage 2's notebook whole (presanitized).

    That step checks the executed notebook against the submitted file's bytes and returns it
    in place of the notebook it is given, so nbconvert's parsing and validating of the
    submission, and its normalised copy and two deep copies of it, went to a notebook
    thrown away. Those steps now see an empty notebook; the steps and the validation after
    them are nbconvert's (once, after the last), and the notebook it writes is nbconvert's,
    read back (written compact, below). With any other first step, nbconvert's own reading
    and writing."""

    @default("optimistic_validation")
    def _validate_once(self):
        """nbconvert's own option: the notebook is validated once, after the last step, not
        after each of the seven recording steps (each a walk of the whole notebook's schema)."""
        return True

    def _recording(self) -> bool:
        from grader.nbgrader.execute import LoadExecuted

        first = self._preprocessors[0] if self._preprocessors else None
        return isinstance(first, LoadExecuted) and first.enabled and first.presanitized

    def from_file(self, file_stream, resources=None, **kw):
        if not self._recording():
            return super().from_file(file_stream, resources=resources, **kw)
        return self.from_notebook_node(nbformat.v4.new_notebook(), resources=resources, **kw)

    def from_notebook_node(self, nb, resources=None, **kw):
        """The autograded notebook, written by Python's C encoder: compact, keys sorted, what
        nbformat strips from a file stripped. nbformat.writes would validate it again (the
        steps' validation has just run) and indent it with the pure-Python encoder: under
        cProfile, a fifth of recording a notebook's CPU. Jupyter and nbgrader read it as any
        notebook."""
        if not self._recording():
            return super().from_notebook_node(nb, resources, **kw)
        nb_copy, resources = Exporter.from_notebook_node(self, nb, resources, **kw)
        resources["output_suffix"] = ".nbconvert"  # (as nbconvert names a notebook it writes)
        strip_transient(nb_copy)
        return json.dumps(nb_copy, ensure_ascii=False, sort_keys=True) + "\n", resources


class RecordExecuted(Autograde):
    """nbgrader's autograde converter, one pass instead of two, for notebooks that stage 1
    sanitized and stage 2 executed. nbgrader's first pass would read the submission, run the
    (here empty) sanitizing steps and write it for the second to read again; here the autograde
    steps run on the submission as read, and their first, LoadExecuted (presanitized), puts
    the executed notebook in its place, refusing one not made from that very file."""

    @default("exporter_class")
    def _default_exporter_class(self):
        return RecordingExporter

    def _init_preprocessors(self) -> None:
        self.exporter._preprocessors = []
        for step in self.autograde_preprocessors:
            self.exporter.register_preprocessor(step)

    def convert_single_notebook(self, notebook_filename: str) -> None:
        self._init_preprocessors()
        with utils.setenv(NBGRADER_EXECUTION="autograde"):
            BaseConverter.convert_single_notebook(self, notebook_filename)


class RecordingAPI(NbGraderAPI):
    def autograde(self, assignment_id, student_id, force=True, create=True):
        """nbgrader's NbGraderAPI.autograde with RecordExecuted as the converter."""
        with utils.temp_attrs(self.coursedir, assignment_id=assignment_id,
                              student_id=student_id):
            app = RecordExecuted(coursedir=self.coursedir, parent=self)
            app.force, app.create_student = force, create
            return utils.capture_log(app)
