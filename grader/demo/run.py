"""`make demo`: release every assignment, grade a sample class on each, export.

The sample classes are graded into the course `make lab` opens (build/course, or --course), so
the formgrader shows them; the demo's own files (the sample submissions, a copy of each feedback
page, the class reports, grades.csv) are written under build/demo/, or, for a course of the
user's (--course DIR), under DIR/demo/: a demo on another course touches nothing outside it. A
course that holds grades of students the demo did not add is refused: sample grades never mix
into a real class's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from grader.course import DEFAULT_COURSE, REPO, Course
from grader.demo.sample_class import SAMPLE_CLASSES, Student, write_class
from grader.nbgrader.release import release
from grader.outputs.export import export
from grader.outputs.feedback import feedback
from grader.outputs.report import report
from grader.pipeline.autograde import Result, autograde, progress_to
from grader.sandbox.confinement import confinement


def _show(path: Path) -> Path:
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def meets_expectation(student: Student, r: Result) -> bool:
    """Judged on the autograded points: written answers wait for the instructor."""
    if r.error:
        return False
    return {"full": r.auto_score == r.auto_max,
            "zero": r.auto_score == 0,
            "partial": 0 < r.auto_score < r.auto_max}[student.expect]


MARK = ".made-by-make-demo"  # in a course directory the demo graded its sample classes into
DEMO_FILES = REPO / "build" / "demo"  # the demo's own files, for `make demo`'s course
OWN = ("submissions", "feedback", "reports", "grades.csv")  # what the demo writes there


def files_of(course: Course) -> Path:
    """Where the demo writes its own files for `course`: build/demo/ for the course `make demo`
    and `make lab` use (build/course), else DIR/demo/ inside the course DIR."""
    if course.root.resolve() == DEFAULT_COURSE.root.resolve():
        return DEMO_FILES
    return course.root / "demo"


def claim(course: Course) -> None:
    """Mark `course` as the demo's, or raise ValueError (before anything is written) when it
    holds students of a course the demo did not make: a real class's gradebook."""
    if (course.root / MARK).exists() or not course.has_gradebook:
        return
    with course.gradebook() as gb:
        students = [s.id for s in gb.students]
    if students:
        raise ValueError(
            f"the course {course.root} holds the grades of {len(students)} student(s) the demo "
            "did not add: the demo grades its sample classes into a course of its own; pass "
            "another, e.g. `python -m grader demo --course build/demo-course`")


def run_demo(out: Path | None = None, say=print,
             assignments: list[str] | None = None,
             course: Course | None = None,
             unconfined: bool = False) -> dict[str, list[tuple[Student, Result]]]:
    """Grade the sample classes into `course` (default: a fresh one in out/course); the demo's
    own files go to `out` (default: files_of(course)), made afresh: with a course of its own,
    `out` is emptied; with a course given, only the demo's files in `out` (OWN) are removed.
    `unconfined`: grade even where the sandbox cannot be built (the sample classes are the
    course's own code; each submission is flagged 'unconfined')."""
    own_course = course is None
    if own_course:
        out = DEMO_FILES if out is None else out
        course = Course(out / "course")
    elif out is None:
        out = files_of(course)
    claim(course)
    confinement(unconfined)  # no sandbox and not --unconfined: stop before anything is done
    if own_course:
        if out.exists():
            shutil.rmtree(out)
    else:
        for path in (out / name for name in OWN):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
    course.root.mkdir(parents=True, exist_ok=True)
    (course.root / MARK).write_text("The sample classes of `make demo` are graded here.\n")
    rows = {}
    for assignment in assignments or list(SAMPLE_CLASSES):
        rows[assignment] = grade_sample_class(course, assignment, out, say, unconfined)
    csv = export(course, out / "grades.csv")
    say(f"Grades of every assignment: {_show(csv)}")
    for assignment, table_rows in rows.items():
        say("")
        say(table(assignment, table_rows))
    return rows


def grade_sample_class(course: Course, assignment: str, out: Path, say,
                       unconfined: bool = False):
    students = SAMPLE_CLASSES[assignment]
    say(f"== {assignment}")
    released = release(course, assignment)
    say(f"   released (solutions and hidden tests removed): {_show(released)}")
    submissions = out / "submissions" / assignment  # each class in its own folder
    for notebook in course.notebooks(assignment):
        write_class(course.source / assignment / f"{notebook}.ipynb",
                    released / f"{notebook}.ipynb", students, submissions, assignment)
    say(f"   autograding {len(students)} sample students (each in its own confined process)")
    # force: a course the demo graded before holds the same submissions, which would be skipped
    with progress_to(lambda line: say("  " + line)):
        results = {r.student: r for r in autograde(course, assignment, submissions, force=True,
                                                   unconfined=unconfined)}
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


def next_steps(course: Course, rows: dict[str, list[tuple[Student, Result]]],
               out: Path | None = None) -> list[str]:
    """The demo's closing lines: where its results are (`out`, default files_of(course)), and
    what to open next."""
    out = files_of(course) if out is None else out
    assignment = "self_attention" if "self_attention" in rows else next(iter(rows))
    student = next((s for s, _ in rows[assignment] if s.expect == "partial"),
                   rows[assignment][0][0])
    lab = "make lab" if course.root == (REPO / "build" / "course") else \
        f"python -m grader --course {course.root} lab"
    return ["",
            "Open next:",
            f"  the class report of {assignment}:  {(out / 'reports' / assignment).resolve()}"
            ".html",
            f"  a feedback page ({student.id}: {student.story}):  "
            f"{(out / 'feedback' / assignment / student.id).resolve()}.html",
            f"  every assignment's grades:  {(out / 'grades.csv').resolve()}",
            f"  the formgrader on the graded course ({course.root}):  {lab}, then "
            "Nbgrader > Formgrader"]


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
