"""Submissions are executed in the order they were handed in (sorted by student): the
adversarial suites rely on it to grade their honest controls (named to sort last) after the
attackers of the same batch, in the sandbox the attackers may have tampered with. The
instructor's solution, when the preflight executes it, goes before them all."""

from __future__ import annotations

import re

import nbformat
import pytest

import grader.pipeline.pools as parallel
from grader.pipeline.autograde import autograde, progress_to
from grader.pipeline.preflight import SOURCE

STUDENTS = [f"s{i:02d}" for i in range(6)]  # enough that a set's order is not theirs by luck


def answered(course):
    nb = nbformat.read(course.release / "tiny" / "tiny.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = "def double(x):\n    return 2 * x"
    return nb


def graded_order(lines: list[str]) -> list[str]:
    """The students in the order the progress lines report them graded ([n/total] student)."""
    return [m.group(1) for line in lines
            if (m := re.match(r"\s*\[\d+/\d+[^\]]*\]\s+(\S+)", line))]


@pytest.mark.slow  # runs a kernel per student
def test_one_worker_grades_in_submission_order(tiny_course, tmp_path, monkeypatch):
    subs = tmp_path / "submissions"
    nb = answered(tiny_course)
    for student in reversed(STUDENTS):  # created last to first: the folders' order is not it
        (subs / student / "tiny").mkdir(parents=True)
        nbformat.write(nb, subs / student / "tiny" / "tiny.ipynb")
    executed = []
    real = parallel.execute

    def watched(task):
        executed.append(task.student)
        return real(task)

    monkeypatch.setattr(parallel, "execute", watched)
    lines: list[str] = []
    with progress_to(lines.append):
        results = autograde(tiny_course, "tiny", subs, workers=1)

    assert not [r for r in results if r.error], lines
    assert all(r.score == 5 for r in results), lines
    # the instructor's solution, when it is checked in this run (grader/pipeline/preflight.py),
    # before everyone
    checked = [SOURCE] if executed[:1] == [SOURCE] else []
    assert executed == checked + STUDENTS, f"executed in the order {executed}"
    assert graded_order(lines) == STUDENTS, lines


def test_in_process_pool_takes_the_earliest_submitted_first(monkeypatch):
    # Whatever order the futures are handed back in (autograde passes a set), and with a
    # resubmitted one (a retry) after the others.
    ran = []
    monkeypatch.setattr(parallel, "execute", lambda task: ran.append(task) or {})
    pool = parallel.InProcess()
    futures = [pool.submit(n) for n in range(40)]
    retry = pool.submit(0)
    waiting = set(futures) | {retry}
    while waiting:
        waiting -= pool.done(set(reversed(list(waiting))))
    assert ran == list(range(40)) + [0]
