"""Where the grader cannot make a cgroup (a user without a delegated cgroup: `make demo` run with
sudo rather than as root), memory is measured as the fresh process's peak resident size
(grader/judge/fresh.py `_Peak`). That size counts the library code pages the first matmul and
exp load; measured so, the instructor's own tiled attention needed 20 MiB at n = 1024 against an
allowance of 17 and lost the memory test. The grader's warm-up loads them before the measurement
starts: the solution keeps its points, and the whole score matrix at once still loses them."""

from __future__ import annotations

import json

import nbformat
import pytest

import grader.judge.fresh as fresh
from grader.demo.sample_class import SAMPLE_CLASSES, make_submission
from grader.pipeline import preflight
from grader.pipeline.pools import execute
from grader.submission import Limits
from tests.support.classes import released_class
from tests.support.notebooks import grade_id

pytestmark = pytest.mark.slow  # a fresh process per measurement, at n up to 4096


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return released_class(tmp_path_factory.mktemp("memory"), "efficient_attention")


def memory_test(course, notebook: str | None = None) -> str | None:
    """The error of test_tiled_memory when `notebook` (default: the source) is executed with
    no cgroup to measure by; None when it passed."""
    task = preflight.task(course.course, "efficient_attention", Limits(), False)
    if notebook is not None:
        task.notebooks["efficient_attention"] = notebook
    executed = execute(task)
    for cell in json.loads(executed["notebooks"]["efficient_attention"])["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "test_tiled_memory":
            errors = [o for o in cell["outputs"] if o.get("output_type") == "error"]
            return errors[0]["evalue"] if errors else None
    raise AssertionError("no test_tiled_memory cell")


def test_without_a_cgroup_the_solution_keeps_its_memory_points(course, monkeypatch):
    monkeypatch.setattr(fresh, "_memory_files", lambda group: None)  # as without a cgroup
    assert memory_test(course) is None


def test_without_a_cgroup_the_whole_score_matrix_still_loses_them(course, monkeypatch):
    monkeypatch.setattr(fresh, "_memory_files", lambda group: None)
    erin = next(s for s in SAMPLE_CLASSES["efficient_attention"] if s.id == "erin")
    theirs = {grade_id(c): c.source for c in
              make_submission(course.source, course.released, erin).cells}
    nb = nbformat.read(course.source, as_version=4)  # the hidden tests with erin's answers
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = theirs[grade_id(cell)]
    error = memory_test(course, nbformat.writes(nb))
    assert error is not None and "whole score matrix" in error, error
