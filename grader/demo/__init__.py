"""`make demo`: release the self-attention assignment, grade a sample class, export.

Everything is written under build/demo/ (its own course directory, so the demo never touches
an instructor's real gradebook in build/course/).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from grader.autograde import Result, autograde
from grader.course import REPO, Course
from grader.demo.sample_class import SELF_ATTENTION_CLASS, Student, write_class
from grader.export import export
from grader.feedback import feedback
from grader.release import release

ASSIGNMENT = "self_attention"


def _show(path: Path) -> Path:
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def meets_expectation(student: Student, r: Result) -> bool:
    if r.error:
        return False
    return {"full": r.score == r.max_score,
            "zero": r.score == 0,
            "partial": 0 < r.score < r.max_score}[student.expect]


def run_demo(out: Path = REPO / "build" / "demo", say=print) -> list[tuple[Student, Result]]:
    if out.exists():
        shutil.rmtree(out)
    course = Course(out / "course")

    say(f"1. Releasing {ASSIGNMENT} (solutions and hidden tests removed)")
    released = release(course, ASSIGNMENT)
    say(f"   student version: {_show(released)}")

    say("2. Writing the sample class's submissions")
    notebook = f"{ASSIGNMENT}.ipynb"
    submissions = write_class(course.source / ASSIGNMENT / notebook, released / notebook,
                              SELF_ATTENTION_CLASS, out / "submissions", ASSIGNMENT)
    say(f"   {len(SELF_ATTENTION_CLASS)} students in {_show(submissions)}")

    say("3. Autograding (a fresh kernel per student)")
    results = {r.student: r for r in autograde(course, ASSIGNMENT, submissions, progress=say)}

    say("4. Feedback and grades")
    pages = feedback(course, ASSIGNMENT, to=out / "feedback")
    failed = {s: p for s, p in pages.items() if isinstance(p, str)}
    for student, why in failed.items():
        say(f"   feedback for {student} failed: {why}")
    csv = export(course, out / "grades.csv")
    say(f"   feedback pages: {_show(out / 'feedback')}/STUDENT.html")
    say(f"   grades: {_show(csv)}")

    rows = [(s, results[s.id]) for s in SELF_ATTENTION_CLASS]
    say("")
    say(table(rows))
    return rows


def table(rows: list[tuple[Student, Result]]) -> str:
    lines = [f"{'student':<8} {'score':>9}  {'as expected':<14}  story",
             f"{'-' * 8} {'-' * 9}  {'-' * 14}  {'-' * 45}"]
    for student, r in rows:
        score = f"{r.score:g} / {r.max_score:g}"
        ok = "yes" if meets_expectation(student, r) else "NO"
        lines.append(f"{student.id:<8} {score:>9}  {ok + ' (' + student.expect + ')':<14}  "
                     f"{student.story}" + (f"  [error: {r.error}]" if r.error else ""))
    return "\n".join(lines)
