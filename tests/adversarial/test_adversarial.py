"""The adversarial suite: every hostile or broken submission through `python -m grader
autograde`, in one batch, with its expected outcome; the batch must finish and the gradebook
must agree with what was reported."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.pages import flags_section

from .attacks import FULL, attacks, build

pytestmark = pytest.mark.slow


TAG = f"adversarial-{os.getpid()}"


def _processes_of_this_run() -> set[int]:
    """Processes started by the grading run below (they inherit its environment tag)."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if f"GRADER_TEST_TAG={TAG}".encode() in env.split(b"\0"):
            found.add(int(pid))
    return found


@pytest.fixture(scope="module")
def graded(own_class):
    mine = own_class("adversarial")
    suite = attacks(mine.course.root)
    for attack in suite:
        build(attack, mine.released, mine.folder(attack.name))
    run = mine.autograde("--cell-timeout", "6", "--notebook-timeout", "60", "--memory", "2G",
                         timeout=1200, env={**os.environ, "GRADER_TEST_TAG": TAG})
    return mine.course, suite, run, mine.status(), _processes_of_this_run()


def test_suite_is_big_enough(graded):
    _, suite, *_ = graded
    assert len(suite) >= 20
    assert sum(a.points == 0 for a in suite) >= 20, "at least 20 attacks that must earn nothing"


def test_the_batch_finishes(graded):
    _, suite, run, status, _ = graded
    # exit status 1: the batch ran to its end, with error rows (the attacks with no points)
    assert run.returncode == (1 if any(a.points is None for a in suite) else 0), \
        run.stdout[-3000:] + run.stderr[-3000:]
    assert set(status) == {a.name for a in suite}, "every submission has a row"


@pytest.mark.parametrize("name", [a.name for a in attacks(Path("/course"))])
def test_outcome(graded, name):
    _, suite, run, status, _ = graded
    attack = next(a for a in suite if a.name == name)
    row = status[name]
    if attack.points is None:
        assert row["error"], f"{name}: expected an error row, got {row}"
        assert row["auto_score"] == 0
    else:
        assert row["error"] is None, f"{name}: {row['error']}"
        assert row["auto_score"] == attack.points, (
            f"{name} ({attack.what}) scored {row['auto_score']}, expected {attack.points}\n"
            + run.stdout[-2000:])
    kinds = {f["kind"] for f in row.get("flags", [])}
    assert attack.flags <= kinds, f"{name}: flags {kinds}, expected at least {attack.flags}"


def test_error_rows_name_the_problem(graded):
    _, _, _, status, _ = graded
    assert "soft_select (1).ipynb" in status["misnamed_notebook"]["error"]
    assert "no notebook" in status["missing_notebook"]["error"]
    assert "UTF-8" in status["not_utf8"]["error"] or "JSON" in status["not_utf8"]["error"]


def test_gradebook_is_consistent(graded):
    course, suite, _, status, _ = graded
    with course.gradebook() as gb:
        assignment = gb.find_assignment("soft_select")
        assert assignment.max_code_score == FULL, "forged points must not change the maximum"
        for attack in suite:
            student = gb.find_student(attack.name)
            assert student is not None
            if attack.points is not None:
                sub = gb.find_submission("soft_select", attack.name)
                assert sub.code_score == status[attack.name]["auto_score"]
                assert sub.max_code_score == FULL


def test_no_process_left_behind(graded):
    """Workers, the zygote and the fork bomb's children (even those in their own session)."""
    *_, left = graded
    assert not left, f"processes of the grading run still alive: {sorted(left)}"


def test_huge_output_was_capped(graded):
    course, *_ = graded
    nb = course.autograded / "huge_output" / "soft_select" / "soft_select.ipynb"
    assert nb.stat().st_size < 2 * 2**20, f"{nb} is {nb.stat().st_size} bytes"


def test_report_lists_the_flags(graded, tmp_path):
    course, *_ = graded
    flags = flags_section(course.root, "soft_select", tmp_path)
    for student in ("import_solutions", "infinite_loop", "deleted_tests", "kernel_crash"):
        assert f"<td>{student}</td>" in flags, f"{student} missing from the report's flags"
