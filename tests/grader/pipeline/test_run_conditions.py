"""A condition of the grading machine (no writable cgroup: rlimits instead) is the run's, said
once: not a flag on each student's row of the status file or the class report."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from grader.course import Course
from grader.outputs import report as report_module
from grader.pipeline.grades import load_run, load_status, run_path, save_status
from grader.sandbox.confinement import Confinement

RLIMITS = "rlimits, not a cgroup"


@dataclass
class Outcome:
    student: str
    auto_score: float = 1.0
    auto_max: float = 2.0
    error: str | None = None
    flags: list = field(default_factory=list)
    seconds: float = 0.5
    skipped: bool = False


def test_no_cgroup_is_a_condition_of_the_run_not_a_flag():
    without_cgroups = Confinement(sandboxed=True, cgroups=False)
    assert without_cgroups.flags() == []
    assert [c for c in without_cgroups.conditions() if RLIMITS in c]
    assert Confinement(sandboxed=True, cgroups=True).conditions() == []
    # the instructor's --unconfined stays on every grade it gave
    assert [f["kind"] for f in Confinement(False, True, "asked").flags()] == ["unconfined"]


def test_the_status_keeps_the_run_once_beside_the_students(tmp_path):
    run = {"conditions": Confinement(sandboxed=True, cgroups=False).conditions()}
    students = [Outcome(f"s{i:03d}") for i in range(200)]
    path = save_status(tmp_path, "a1", students, run=run)
    assert RLIMITS not in path.read_text()
    assert run_path(tmp_path, "a1").read_text().count(RLIMITS) == 1
    assert sorted(load_status(tmp_path, "a1")) == [s.student for s in students]
    assert load_run(tmp_path, "a1") == run
    # a later run that grades some students again keeps one run record, its own
    save_status(tmp_path, "a1", students[:3], run={"conditions": []})
    assert load_run(tmp_path, "a1") == {"conditions": []}
    assert len(load_status(tmp_path, "a1")) == 200


def test_the_class_report_says_the_condition_once(tmp_path, monkeypatch):
    course = Course.at(tmp_path / "course")
    students = {f"s{i:03d}": 1.0 for i in range(200)}
    save_status(course.root, "a1", [Outcome(s) for s in students],
                run={"conditions": Confinement(sandboxed=True, cgroups=False).conditions()})
    # the gradebook's side of the report is not what this is about: its scores, given
    monkeypatch.setattr(report_module, "collect",
                        lambda course, assignment: (students, 2.0, [], Counter(), {}, {}))
    page = report_module.report(course, "a1", tmp_path / "report.html")
    text = Path(page).read_text()
    assert text.count(RLIMITS) == 1
    assert "s199" in text
