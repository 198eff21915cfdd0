"""`make demo`: release every assignment, grade a sample class on each, export.

Everything is written under build/demo/ (its own course directory, so the demo never touches
an instructor's real gradebook in build/course/).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from grader.autograde import Result, autograde
from grader.course import REPO, Course
from grader.demo.sample_class import SAMPLE_CLASSES, Student, write_class
from grader.export import export
from grader.feedback import feedback
from grader.release import release
from grader.report import report


def _show(path: Path) -> Path:
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def meets_expectation(student: Student, r: Result) -> bool:
    """Judged on the autograded points: written answers wait for the instructor."""
    if r.error:
        return False
    return {"full": r.auto_score == r.auto_max,
            "zero": r.auto_score == 0,
            "partial": 0 < r.auto_score < r.auto_max}[student.expect]


def run_demo(out: Path = REPO / "build" / "demo", say=print,
             assignments: list[str] | None = None) -> dict[str, list[tuple[Student, Result]]]:
    if out.exists():
        shutil.rmtree(out)
    course = Course(out / "course")
    rows = {}
    for assignment in assignments or list(SAMPLE_CLASSES):
        rows[assignment] = grade_sample_class(course, assignment, out, say)
    csv = export(course, out / "grades.csv")
    say(f"Grades of every assignment: {_show(csv)}")
    for assignment, table_rows in rows.items():
        say("")
        say(table(assignment, table_rows))
    return rows


def grade_sample_class(course: Course, assignment: str, out: Path, say):
    students = SAMPLE_CLASSES[assignment]
    say(f"== {assignment}")
    released = release(course, assignment)
    say(f"   released (solutions and hidden tests removed): {_show(released)}")
    submissions = out / "submissions" / assignment  # each class in its own folder
    for notebook in course.notebooks(assignment):
        write_class(course.source / assignment / f"{notebook}.ipynb",
                    released / f"{notebook}.ipynb", students, submissions, assignment)
    say(f"   autograding {len(students)} sample students (each in its own confined process)")
    results = {r.student: r for r in autograde(course, assignment, submissions,
                                               progress=lambda line: say("  " + line))}
    pages = feedback(course, assignment, students=[s.id for s in students],
                     to=out / "feedback" / assignment)
    for student, why in pages.items():
        if isinstance(why, str):
            say(f"   feedback for {student} failed: {why}")
    say(f"   feedback pages: {_show(out / 'feedback' / assignment)}/STUDENT.html")
    page = report(course, assignment, out / "reports" / f"{assignment}.html",
                  feedback_dir=out / "feedback" / assignment)
    say(f"   class report: {_show(page)}")
    return [(s, results[s.id]) for s in students]


def table(assignment: str, rows: list[tuple[Student, Result]]) -> str:
    written = rows[0][1].max_score - rows[0][1].auto_max
    title = f"{assignment}: autograded points" + (
        f" ({written:g} more for written answers, graded by hand)" if written else "")
    lines = [title,
             f"{'student':<8} {'score':>9}  {'as expected':<14}  story",
             f"{'-' * 8} {'-' * 9}  {'-' * 14}  {'-' * 45}"]
    for student, r in rows:
        score = f"{r.auto_score:g} / {r.auto_max:g}"
        ok = "yes" if meets_expectation(student, r) else "NO"
        lines.append(f"{student.id:<8} {score:>9}  {ok + ' (' + student.expect + ')':<14}  "
                     f"{student.story}" + (f"  [error: {r.error}]" if r.error else ""))
    return "\n".join(lines)
