"""One place that builds nbgrader's API object for a course, and runs its steps."""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING

import nbformat
from nbconvert.exporters import Exporter, NotebookExporter
from nbformat.v4.rwbase import strip_transient
from nbgrader import utils
from nbgrader.apps import NbGraderAPI
from nbgrader.converters import Autograde
from nbgrader.converters.base import BaseConverter
from nbgrader.coursedir import CourseDirectory
from traitlets import default

from grader.course import Course
from grader.nbgrader.config import nbgrader_config, setup_process
from grader.nbgrader.preprocessors import CheckCellMetadata

if TYPE_CHECKING:
    from grader.sandbox.session import Limits

EXCEPTION_LINE = re.compile(r"^[A-Za-z_.]*(Error|Exception): ")


class NbGraderError(RuntimeError):
    """An nbgrader step failed; the message carries the reason from nbgrader's log."""


def api_for(course: Course, limits: Limits | None = None, unconfined: bool = False,
            recording: bool = False) -> NbGraderAPI:
    """limits: the limits of every notebook (default Limits()); unconfined: the instructor's
    explicit choice to grade without the sandbox; recording: autograde only records notebooks
    grader.pipeline.autograde sanitized and executed (its stage 3): nbgrader's sanitizing pass, done
    in stage 1 already, is left out (RecordExecuted)."""
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
    return (_RecordingAPI if recording else NbGraderAPI)(CourseDirectory(config=config),
                                                          config=config)


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


class _RecordingAPI(NbGraderAPI):
    def autograde(self, assignment_id, student_id, force=True, create=True):
        """nbgrader's NbGraderAPI.autograde with RecordExecuted as the converter."""
        with utils.temp_attrs(self.coursedir, assignment_id=assignment_id,
                              student_id=student_id):
            app = RecordExecuted(coursedir=self.coursedir, parent=self)
            app.force, app.create_student = force, create
            return utils.capture_log(app)


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
