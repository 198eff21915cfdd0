"""End to end on a tiny assignment: grading, stderr, feedback, export and bad submissions."""

import csv
import shutil

import nbformat

from grader.nbgrader.api import reason
from grader.outputs.export import export
from grader.outputs.feedback import feedback
from grader.pipeline.autograde import autograde


def submit(course, submissions, student, notebook=None, raw: bytes | None = None):
    folder = submissions / student / "tiny"
    folder.mkdir(parents=True)
    if raw is not None:
        (folder / "tiny.ipynb").write_bytes(raw)
    else:
        nbformat.write(notebook, folder / "tiny.ipynb")


def answered(course, body: str):
    nb = nbformat.read(course.release / "tiny" / "tiny.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = f"def double(x):\n    {body}"
    return nb


def executed(course, subs, student: str, body: str):
    """Stages 1 and 2 for one submission of `double` written as `body`: (flags, outcome)."""
    from grader.pipeline import autograde as stages
    from grader.pipeline.pools import execute

    submit(course, subs, student, answered(course, body))
    task, flags = stages.prepare(course, "tiny", student, subs / student / "tiny", None,
                                        False)
    return flags, execute(task)


def test_a_judge_remembers_reference_outputs_for_its_next_notebooks(tiny_course, tmp_path,
                                                                    monkeypatch):
    # The memory of reference outputs (grader/judge/memo.py) starts off in every process; a
    # process that judges a notebook turns it on for the notebooks it judges next.
    from grader.judge.memo import MEMO

    monkeypatch.setattr(MEMO, "enabled", False)
    flags, outcome = executed(tiny_course, tmp_path / "submissions", "ada", "return 2 * x")
    assert outcome["notebooks"] and MEMO.enabled


def test_batch_grades_everyone_and_reports_bad_submissions(tiny_course, tmp_path):
    subs = tmp_path / "submissions"
    submit(tiny_course, subs, "good", answered(tiny_course, "return 2 * x"))
    submit(tiny_course, subs, "wrong", answered(tiny_course, "return x + 2"))  # double(2) == 4
    shutil.copytree(tiny_course.release / "tiny", subs / "blank" / "tiny")
    submit(tiny_course, subs, "broken", raw=b'{"cells": [ this is not json')
    (subs / "lost" / "other_assignment").mkdir(parents=True)

    results = {r.student: r for r in autograde(tiny_course, "tiny", subs)}

    assert set(results) == {"good", "wrong", "blank", "broken", "lost"}
    # the visible test warns on stderr: a correct answer still gets its points
    assert (results["good"].score, results["good"].max_score) == (5, 5)
    assert results["good"].error is None
    assert results["wrong"].score == 2  # passes the visible test, fails the hidden one
    assert results["blank"].score == 0 and results["blank"].error is None
    assert results["broken"].error and results["broken"].score == 0
    assert "lost" in results and "no folder tiny/" in results["lost"].error
    # the originals are untouched
    assert (subs / "broken" / "tiny" / "tiny.ipynb").read_bytes().startswith(b'{"cells": [ this')

    grades = {row["student_id"]: row for row in csv.DictReader(
        open(export(tiny_course, tmp_path / "grades.csv")))}
    assert float(grades["good"]["score"]) == 5 and float(grades["wrong"]["score"]) == 2
    assert float(grades["broken"]["score"]) == 0, "a failed student must still be in the export"

    pages = feedback(tiny_course, "tiny", to=tmp_path / "feedback")
    html = (tmp_path / "feedback" / "wrong.html").read_text()
    assert pages["wrong"] == [tmp_path / "feedback" / "wrong.html"]
    assert "BEGIN HIDDEN TESTS" not in html and "double(-3)" not in html
    assert "AssertionError" in html


def test_reason_prefers_the_exception_line():
    result = {"success": False, "log": "[INFO] start\n[ERROR] Something went wrong\n"
              "    ValueError: notebook is broken\n[ERROR] Please see the above traceback"}
    assert reason(result) == "ValueError: notebook is broken"
    assert reason({"success": False, "log": "[ERROR] plain failure"}) == "plain failure"


def test_record_takes_only_a_notebook_executed_from_the_file_as_it_is(tiny_course, tmp_path,
                                                                      monkeypatch):
    # Stage 3 does not sanitize again: it takes stage 2's notebook whole, and only when that
    # was made from the submitted file as it is now (its SHA-256, written in stage 1).
    from nbconvert.exporters import Exporter
    from nbgrader.converters.base import BaseConverter

    from grader.pipeline import autograde as stages

    flags, outcome = executed(tiny_course, tmp_path / "submissions", "good", "return 2 * x")
    api = stages.api_for(tiny_course, recording=True)
    # the intake copy changed after it was sanitized and executed: refused, the grader's fault
    copy = tiny_course.submitted / "good" / "tiny" / "tiny.ipynb"
    original = copy.read_bytes()
    copy.write_bytes(original.replace(b"return 2 * x", b"return 3 * x"))
    changed = stages.record(tiny_course, api, "tiny", "good", outcome, flags)
    assert changed.error and "does not match" in changed.error and changed.infrastructure
    copy.write_bytes(original)
    written = []
    write = BaseConverter.write_single_notebook
    monkeypatch.setattr(BaseConverter, "write_single_notebook",
                        lambda self, *args: written.append(args) or write(self, *args))
    validated = []
    check = Exporter._validate_preprocessor
    monkeypatch.setattr(Exporter, "_validate_preprocessor",
                        lambda self, *args: validated.append(args) or check(self, *args))
    result = stages.record(tiny_course, api, "tiny", "good", outcome, flags)
    assert result.error is None and (result.score, result.max_score) == (5, 5)
    assert len(written) == 1, "one pass of nbgrader's converter (its own autograde: two)"
    assert len(validated) == 1, "validated once, after the pass's last step, not after each"


def test_each_notebook_grades_are_written_in_one_transaction(tiny_course, tmp_path,
                                                             monkeypatch):
    """SaveAutoGradesOnce: nbgrader's rows, one commit a notebook, written in one flush; a
    notebook whose recording fails half-way leaves none of its grades behind."""
    from nbgrader import utils
    from nbgrader.api import MissingEntry
    from sqlalchemy import event
    from sqlalchemy.orm import Session

    from grader.nbgrader.patches import SaveAutoGradesOnce

    inside, commits, flushes = [], [], []  # the student whose cells are being recorded;
    # the commits and flushes made meanwhile
    preprocess_cell = SaveAutoGradesOnce.preprocess_cell

    def watched(self, cell, resources, index):
        inside.append(resources["nbgrader"]["student"])
        try:
            return preprocess_cell(self, cell, resources, index)
        finally:
            inside.pop()

    def count(session):
        if inside:
            commits.append(inside[-1])

    def count_flush(session, context):
        if inside:
            flushes.append(inside[-1])

    monkeypatch.setattr(SaveAutoGradesOnce, "preprocess_cell", watched)
    event.listen(Session, "after_commit", count)
    event.listen(Session, "after_flush", count_flush)
    determine_grade = utils.determine_grade

    def fails_on_the_hidden_test(cell, log=None):
        if cell.metadata["nbgrader"]["grade_id"] == "test_double_hidden":
            raise RuntimeError("the disk is gone")
        return determine_grade(cell, log)

    try:
        subs = tmp_path / "submissions"
        submit(tiny_course, subs, "good", answered(tiny_course, "return 2 * x"))
        submit(tiny_course, subs, "wrong", answered(tiny_course, "return x + 2"))
        results = {r.student: r for r in autograde(tiny_course, "tiny", subs)}
        assert (results["good"].score, results["wrong"].score) == (5, 2)
        assert sorted(commits) == ["good", "wrong"]  # nbgrader's own: 3 each (a commit per
        # graded or answer cell)
        assert sorted(flushes) == ["good", "wrong"], "each notebook's rows in one flush"

        monkeypatch.setattr(utils, "determine_grade", fails_on_the_hidden_test)
        submit(tiny_course, subs, "unlucky", answered(tiny_course, "return 2 * x"))
        results = {r.student: r for r in autograde(tiny_course, "tiny", subs)}
    finally:
        event.remove(Session, "after_commit", count)
        event.remove(Session, "after_flush", count_flush)
    assert results["unlucky"].error
    with tiny_course.gradebook() as gb:
        try:
            grade = gb.find_grade("test_double", "tiny", "tiny", "unlucky")
        except MissingEntry:
            grade = None
        assert grade is None or grade.auto_score is None, \
            "the first test cell's grade was kept from a notebook whose recording failed"
        assert gb.find_grade("test_double", "tiny", "tiny", "good").auto_score == 2


def test_stages_hand_notebooks_over_as_compact_json_that_reads_back_whole(tiny_course,
                                                                         tmp_path):
    # Stage 1 -> the pool -> stage 3 pass notebooks as JSON written by the C encoder
    # (grader.notebooks.handover), not nbformat.writes' indented form; what the next stage
    # reads is the notebook nbformat.writes would have handed over, non-ASCII text included.
    from grader.notebooks import handover
    from grader.pipeline import autograde as stages
    from grader.pipeline.pools import execute

    subs = tmp_path / "submissions"
    submit(tiny_course, subs, "ada", answered(tiny_course, "return 2 * x  # ×2, «double»"))
    task, _ = stages.prepare(tiny_course, "tiny", "ada", subs / "ada" / "tiny", None,
                                    False)
    outcome = execute(task)
    for text in (task.notebooks["tiny"], outcome["notebooks"]["tiny"]):
        assert "\n " not in text, "indented JSON: nbformat.writes, not the hand-over"
        nb = nbformat.reads(text, as_version=4)
        assert nbformat.reads(nbformat.writes(nb), as_version=4) == nb
        assert nbformat.reads(handover(nb), as_version=4) == nb
    executed = nbformat.reads(outcome["notebooks"]["tiny"], as_version=4)
    assert any("«double»" in c.source for c in executed.cells)
    assert any(c.get("outputs") for c in executed.cells), "the executed outputs came back"


def test_the_outputs_the_judge_writes_fit_the_notebook_schema(tiny_course, tmp_path):
    # The judge makes its outputs (printed text, errors) as plain NotebookNodes, unchecked:
    # the executed notebook, printed text and failed tests included, must pass nbformat's
    # validation as it is.
    from grader.pipeline import autograde as stages
    from grader.pipeline.pools import execute

    subs = tmp_path / "submissions"
    body = "print('out', x)\n    import sys\n    print('err', file=sys.stderr)\n    return x + 2"
    submit(tiny_course, subs, "ada", answered(tiny_course, body))
    task, _ = stages.prepare(tiny_course, "tiny", "ada", subs / "ada" / "tiny", None,
                                    False)
    executed = nbformat.reads(execute(task)["notebooks"]["tiny"], as_version=4)
    nbformat.validate(executed)  # raises on any output outside the schema
    outputs = [o for c in executed.cells for o in c.get("outputs", [])]
    assert {"stream", "error"} <= {o.output_type for o in outputs}
    assert {o.name for o in outputs if o.output_type == "stream"} >= {"stdout"}
    assert all(isinstance(line, str) for o in outputs if o.output_type == "error"
               for line in o.traceback)


def test_recording_skips_parsing_the_submission_and_writes_what_nbconvert_writes(tiny_course,
                                                                                 tmp_path,
                                                                                 monkeypatch):
    # RecordingExporter: with LoadExecuted (presanitized) first, the submitted file is not
    # parsed (that step replaces the notebook by the executed one); the autograded notebook is
    # the one nbconvert's own exporter writes, read back (written compact, by the C encoder,
    # and valid), and the grades are the same. With another first step it reads the file as
    # nbconvert does.
    from nbconvert.exporters import NotebookExporter

    from grader.nbgrader.patches import RecordingExporter
    from grader.pipeline import autograde as stages

    subs = tmp_path / "submissions"
    flags, outcome = executed(tiny_course, subs, "ada", "print('×2')\n    return x + 2")
    autograded = tiny_course.root / "autograded" / "ada" / "tiny" / "tiny.ipynb"
    written, parsed = {}, []
    reads = nbformat.reads
    for exporter in (NotebookExporter, RecordingExporter):
        api = stages.api_for(tiny_course, recording=True)
        api.config.RecordExecuted.exporter_class = exporter
        monkeypatch.setattr(nbformat, "reads", lambda *a, exporter=exporter, **k:
                            parsed.append(exporter) or reads(*a, **k))
        result = stages.record(tiny_course, api, "tiny", "ada", outcome, flags)
        assert result.error is None and result.score == 2
        written[exporter] = autograded.read_bytes()
    ours, theirs = (reads(written[e].decode(), as_version=4)
                    for e in (RecordingExporter, NotebookExporter))
    assert ours == theirs and any(c.get("outputs") for c in ours.cells)
    nbformat.validate(ours)
    assert written[RecordingExporter].count(b"\n") == 1  # compact: one line
    assert written[NotebookExporter].count(b"\n") > 100  # nbformat's indented lines
    assert parsed.count(NotebookExporter) == 2  # the submission and the executed copy
    assert parsed.count(RecordingExporter) == 1  # the executed copy only

    plain = RecordingExporter()  # no steps: nbconvert's reading
    nb, _ = plain.from_filename(str(subs / "ada" / "tiny" / "tiny.ipynb"))
    assert "×2" in nb
