"""Autograde a folder of submissions, one student at a time, never stopping the batch.

Submissions use nbgrader's layout: DIR/STUDENT/ASSIGNMENT/NOTEBOOK.ipynb. They are copied into
the course's submitted/ folder (the originals are never touched) and graded by nbgrader.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from grader.course import COURSE_ID, Course
from grader.nbgrader_api import api_for, reason
from grader.notebooks import unreadable_notebooks
from grader.release import release
from grader.sandbox.execute import add_flags, flags_path, read_flags

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]*$")


@dataclass
class Result:
    student: str
    score: float  # everything graded so far (autograded + manual)
    max_score: float
    auto_score: float  # the autograded tests alone
    auto_max: float
    error: str | None = None  # why the submission could not be graded
    needs_manual: bool = False  # written answers wait for the instructor
    flags: list[dict] = field(default_factory=list)  # what the instructor should look at

    @property
    def status(self) -> str:
        return "error" if self.error else "graded"


def find_submissions(submissions: Path, assignment: str) -> dict[str, Path | str]:
    """{student: their assignment folder, or the reason it is unusable}."""
    if not submissions.is_dir():
        raise FileNotFoundError(f"submissions folder {submissions} does not exist")
    found: dict[str, Path | str] = {}
    for entry in sorted(submissions.iterdir()):
        if entry.name.startswith("."):
            continue
        if not entry.is_dir():
            continue
        folder = entry / assignment
        if not STUDENT_ID.match(entry.name):
            found[entry.name] = (f"folder name {entry.name!r} is not a valid student id "
                                 "(letters, digits, _ . @ -)")
        elif not folder.is_dir():
            others = ", ".join(p.name for p in entry.iterdir()) or "nothing"
            found[entry.name] = (f"no folder {assignment}/ in {entry} (found: {others})")
        else:
            found[entry.name] = folder
    if not found:
        raise FileNotFoundError(f"no student folders in {submissions} "
                                f"(expected {submissions}/STUDENT/{assignment}/*.ipynb)")
    return found


def _scores(course: Course, assignment: str, student: str) -> dict:
    with Gradebook(course.db_url, COURSE_ID) as gb:
        try:
            sub = gb.find_submission(assignment, student)
            return dict(score=sub.score, max_score=sub.max_score, auto_score=sub.code_score,
                        auto_max=sub.max_code_score, needs_manual=sub.needs_manual_grade)
        except MissingEntry:
            gb.update_or_create_student(student)  # so the export lists them, with zero
            a = gb.find_assignment(assignment)
            return dict(score=0.0, max_score=a.max_score, auto_score=0.0,
                        auto_max=a.max_code_score)


def _is_released(course: Course, assignment: str) -> bool:
    if not (course.root / "gradebook.db").exists():
        return False
    with Gradebook(course.db_url, COURSE_ID) as gb:
        try:
            gb.find_assignment(assignment)
            return True
        except MissingEntry:
            return False


def autograde(course: Course, assignment: str, submissions: Path, progress=print,
              limits: dict | None = None) -> list[Result]:
    """Grade every student in `submissions`; returns one Result per student folder.

    limits: overrides of grader.sandbox.session.Limits (cell_timeout, memory_bytes, ...).
    """
    found = find_submissions(Path(submissions), assignment)
    if not _is_released(course, assignment):
        progress(f"{assignment} was not released yet: releasing it first")
        release(course, assignment)
    api = api_for(course, limits=limits)
    results = []
    for student, folder in found.items():
        results.append(grade_one(course, api, assignment, student, folder))
        progress(f"  {student:<12} {_line(results[-1])}")
    save_status(course, assignment, results)
    return results


def grade_one(course: Course, api, assignment: str, student: str, folder) -> Result:
    """One student's submission: copied, checked, graded. Never raises for a bad submission."""
    flags_path(course.root, assignment, student).unlink(missing_ok=True)
    error = folder if isinstance(folder, str) else None
    if error is None:
        try:
            error = _copy_and_check(course, assignment, student, folder)
            if error is None:
                result = api.autograde(assignment, student, force=True, create=True)
                if not result.get("success"):
                    error = reason(result)
        except Exception as e:  # the grader's own failure: reported, never the batch's end
            error = f"could not be graded: {type(e).__name__}: {e}"
    return Result(student, error=error, flags=read_flags(course.root, assignment, student),
                  **_scores(course, assignment, student))


def _copy_and_check(course: Course, assignment: str, student: str, folder: Path) -> str | None:
    target = course.submitted / student / assignment
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(folder, target, symlinks=True)
    expected = course.notebooks(assignment)
    error = unreadable_notebooks(folder, expected)
    if error:
        return error
    present = {p.stem for p in folder.glob("*.ipynb")}
    missing = [n for n in expected if n not in present]
    if missing:
        return (f"no {', '.join(n + '.ipynb' for n in missing)} in {folder} (found: "
                f"{', '.join(sorted(p + '.ipynb' for p in present))}); was it renamed?")
    extra = sorted(present - set(expected))
    if extra:
        add_flags(course.root, assignment, student, "(folder)", [
            {"kind": "extra", "detail": f"extra notebook {n}.ipynb was not graded"}
            for n in extra])
    return None


def status_path(course: Course, assignment: str) -> Path:
    return course.root / "status" / f"{assignment}.json"


def save_status(course: Course, assignment: str, results: list[Result]) -> Path:
    """Record every student's outcome of the last autograde run (read back by the report)."""
    path = status_path(course, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(path.read_text()) if path.exists() else {}
    old.update({r.student: {"auto_score": r.auto_score, "auto_max": r.auto_max,
                            "error": r.error, "flags": r.flags} for r in results})
    path.write_text(json.dumps(old, indent=1, sort_keys=True))
    return path


def _line(r: Result) -> str:
    line = f"{r.auto_score:g} / {r.auto_max:g} autograded"
    if r.max_score > r.auto_max:
        line += f", {r.max_score - r.auto_max:g} more points for written answers"
    if r.flags:
        line += f"  [{len(r.flags)} flag{'s' * (len(r.flags) > 1)}: " + ", ".join(
            sorted({f['kind'] for f in r.flags})) + "]"
    return line + (f"  ERROR: {r.error}" if r.error else "")
