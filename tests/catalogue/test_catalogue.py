"""Every catalogued mistake loses points and fails a hidden test (or a visible check made to be
run locally), no failure names a wrong cause, and at least 90% name the right one; every answer
form earns full marks; `grader check` and `autograde` agree.

Grading is done the way an instructor does it: each assignment's mistakes (and answer forms)
are written as one class of submissions and graded by one `autograde` run. For `grader check`,
the released notebook runs in one kernel per assignment: each student's solution cells are run,
then every visible test cell, as `python -m grader check` runs them in a fresh kernel.
"""

from concurrent.futures import ThreadPoolExecutor

import pytest
from catalogue import FORMS, MISTAKES  # tests/catalogue/ is on sys.path (rootdir-less import)
from forms import CODE_FORMS

from grader.checks.causes import CAUSES, named_causes
from grader.course import REPO, Course
from grader.demo.sample_class import Student, write_class
from grader.nbgrader.release import release
from grader.pipeline.autograde import autograde
from tests.support.verdicts import SKIP, checked, disagreements, failed_tests, visible_tests

pytestmark = pytest.mark.slow
# Causes that visible tests check by design, so that `grader check` reports them: the device
# check (grader/checks/devices.py) needs no reference, and a hidden copy would take points twice.
VISIBLE_CHECKS = {"stray_cpu_tensor"}
ALL_FORMS = [*FORMS, *CODE_FORMS]
CASES = [*MISTAKES, *ALL_FORMS]
ASSIGNMENTS = sorted({c.assignment for c in CASES})


def students(assignment):
    return [Student("perfect", "the source solution", "full")] + [
        Student(c.id, c.id, "partial", edits=[c.edit]) for c in CASES
        if c.assignment == assignment]


def autograded(course, assignment, tmp):
    """{student: (Result, {test grade_id: failure message})} from one autograde run (of the
    released assignment)."""
    released = course.release / assignment
    submissions = tmp / "submissions"
    for notebook in course.notebooks(assignment):
        write_class(course.source / assignment / f"{notebook}.ipynb",
                    released / f"{notebook}.ipynb", students(assignment), submissions, assignment)
    results = {r.student: r for r in autograde(course, assignment, submissions)}
    return {student: (result, failed_tests(course, student, assignment))
            for student, result in results.items()}


@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    """{assignment: (autograde's verdicts, grader check's)}. The checks run in one kernel (one
    core), so they run beside the autograde runs, which keep the other core busy."""
    root = tmp_path_factory.mktemp("catalogue")
    course = Course(root / "course")
    for assignment in ASSIGNMENTS:
        release(course, assignment)
    with ThreadPoolExecutor(1) as beside:
        checks = {a: beside.submit(checked, course, a, students(a), root / a)
                  for a in ASSIGNMENTS}
        grades = {a: autograded(course, a, root / a) for a in ASSIGNMENTS}
        return {a: (grades[a], checks[a].result()) for a in ASSIGNMENTS}


def test_catalogue_is_large_labelled_and_covers_every_assignment():
    assert len(MISTAKES) >= 80
    assert len({c.id for c in CASES}) == len(CASES)
    assert all(m.cause is None or m.cause in CAUSES for m in MISTAKES)
    assert {m.assignment for m in MISTAKES} == {p.parent.name for p in
                                                (REPO / "assignments").glob("*/*.ipynb")}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_correct_solution_earns_full_marks(graded, assignment):
    result, failed = graded[assignment][0]["perfect"]
    assert result.auto_score == result.auto_max, f"the source solution fails: {failed}"


@pytest.mark.parametrize("form", ALL_FORMS, ids=[f.id for f in ALL_FORMS])
def test_every_answer_form_earns_full_marks(graded, form):
    result, failed = graded[form.assignment][0][form.id]
    assert result.auto_score == result.auto_max, f"{form.id} lost points: {failed}"


@pytest.mark.parametrize("mistake", MISTAKES, ids=[m.id for m in MISTAKES])
def test_mistake_loses_points_and_names_no_wrong_cause(graded, mistake):
    result, failed = graded[mistake.assignment][0][mistake.id]
    assert result.auto_score < result.auto_max, f"{mistake.id} lost no points"
    hidden = [gid for gid in failed if gid not in SKIP
              and visible_tests(mistake.assignment).get(gid) != "visible"]
    assert hidden or mistake.cause in VISIBLE_CHECKS, (
        f"{mistake.id} fails no hidden test, only {sorted(failed)}")
    named = {c for message in failed.values() for c in named_causes(message)}
    assert named <= {mistake.cause}, (
        f"{mistake.id} (true cause {mistake.cause}) was blamed on {named - {mistake.cause}}: "
        f"{failed}")


def test_at_least_90_percent_name_the_right_cause(graded):
    """Of the mistakes whose cause a test can tell apart (cause not None), at least 90% name it;
    the others must name none, which test_mistake_loses_points_and_names_no_wrong_cause
    checks."""
    named, missed = [], []
    with_cause = [m for m in MISTAKES if m.cause is not None]
    for mistake in with_cause:
        _, failed = graded[mistake.assignment][0][mistake.id]
        causes = {c for message in failed.values() for c in named_causes(message)}
        (named if mistake.cause in causes else missed).append(mistake.id)
    share = len(named) / len(with_cause)
    print(f"\n{len(MISTAKES)} mistakes, all caught; {len(with_cause)} with a cause a test can "
          f"tell apart, {len(named)} of them name it ({share:.0%}); not named: {missed}")
    assert share >= 0.9, f"only {share:.0%} named; not named: {missed}"


@pytest.mark.parametrize("case", ["perfect", *[c.id for c in CASES]])
def test_check_and_autograde_agree_on_visible_tests(graded, case):
    """A test with only visible code gets the same verdict from both; a test whose hidden part
    the student never sees fails in autograde wherever `grader check` fails it (the released
    code is part of the graded code), and may fail only in autograde otherwise."""
    assignment = next((c.assignment for c in CASES if c.id == case), None)
    for a in [assignment] if assignment else ASSIGNMENTS:
        (_, failed), verdicts = graded[a][0][case], graded[a][1][case]
        assert not (found := disagreements(a, failed, verdicts)), f"{case}: {found}"
