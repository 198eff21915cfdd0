"""Where grades are written: stage 3 of grading (grader/pipeline/autograde.py runs the stages),
and the only module that writes a student's scores, errors or flags.

Two stores, both written from here and from nowhere else:

- the gradebook (nbgrader's database): `record` leaves stage 2's executed notebooks where
  nbgrader's autograde finds them (grader.nbgrader.execute.LoadExecuted) and runs it; its step
  SaveAutoGradesOnce (grader/nbgrader/patches.py, nbgrader's SaveAutoGrades) writes each
  test cell's score, and nbgrader's AssignLatePenalties the late penalty
  (grader/nbgrader/late.py). A student with nothing graded is added with zero (`scores`). The
  grading command is the gradebook's only writer: stage 2 touches no database.
- the run's status, status/ASSIGNMENT.json (`save_status`): each student's flags, error, time
  and folder hash, for the report and the next run (which skips what did not change), and
  status/run/ASSIGNMENT.json: what held for the whole run (a condition of the machine), said
  once rather than on each student's row.

The flags themselves are made where a stage finds something (the intake, the sanitizing steps,
the judge) and handed on as values (grader.submission.Flag); they are stored here.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

from grader import intake
from grader.course import Course
from grader.files import write_atomic
from grader.nbgrader import gradebook
from grader.nbgrader.api import reason
from grader.nbgrader.execute import executed_path
from grader.pipeline.held import failed_tests
from grader.shown import shown
from grader.submission import Executed, Flag, Result, unique

# ----- the gradebook ---------------------------------------------------------------------------


def record(course: Course, api, assignment: str, student: str, outcome: Executed,
           flags: list[Flag]) -> Result:
    """Stage 3 for one student: the executed notebooks left where LoadExecuted finds them, then
    nbgrader's autograde (`api`: grader.nbgrader.api.api_for(..., recording=True)), which
    writes the grades; `flags`: the student's from the stages before."""
    error, infrastructure = None, False
    try:
        for name, nb_json in outcome["notebooks"].items():
            path = executed_path(course.root, assignment, student, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(nb_json)
        result = api.autograde(assignment, student, force=True, create=True)
        if not result.get("success"):
            error = reason(result)
            infrastructure = "does not match the submission" in (result.get("log") or error)
    except Exception as e:  # the grader's own failure: reported, never the batch's end
        error, infrastructure = f"could not be graded: {type(e).__name__}: {e}", True
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(executed_path(course.root, assignment, student, "x").parent)
    return Result(student, error=error, infrastructure=infrastructure,
                  flags=unique(flags + outcome["flags"]), seconds=outcome["seconds"],
                  executed_by=outcome["executed_by"], failed=failed_tests(outcome["notebooks"]),
                  **scores(course, assignment, student))


def not_graded(course: Course, assignment: str, student: str, error: str, flags: list[Flag],
               infrastructure: bool = False) -> Result:
    """The Result of a submission that could not be graded: `error` says why, and its scores
    are what the gradebook holds (zero for a student with none, who is added)."""
    return Result(student, error=error, infrastructure=infrastructure, flags=unique(flags),
                  **scores(course, assignment, student))


def scores(course: Course, assignment: str, student: str) -> dict:
    """The student's scores in the gradebook; zero for one without a submission, who is added
    to the gradebook (so the export lists them, with zero) when `student` is a valid id. A
    folder whose name is not one is no student: it gets a row in the run's status alone."""
    with course.gradebook() as gb:
        if intake.is_student_id(student):
            sub = gradebook.submission(gb, assignment, student)
            if sub is not None:
                return dict(score=sub.score, max_score=sub.max_score, auto_score=sub.code_score,
                            auto_max=sub.max_code_score, needs_manual=sub.needs_manual_grade)
            gb.update_or_create_student(student)
        a = gb.find_assignment(assignment)
        return dict(score=0.0, max_score=a.max_score, auto_score=0.0, auto_max=a.max_code_score)


def has_submission(course: Course, assignment: str, student: str) -> bool:
    """Whether the gradebook holds grades of `student` for `assignment`."""
    with course.gradebook() as gb:
        return gradebook.submission(gb, assignment, student) is not None


# ----- the run's status --------------------------------------------------------------------------


def status_path(course_root: Path, assignment: str) -> Path:
    return Path(course_root) / "status" / f"{assignment}.json"


def run_path(course_root: Path, assignment: str) -> Path:
    """Beside the students' status file, the run's own: what held for every student of the
    last run (a condition of the machine), said once rather than on each student's row."""
    return Path(course_root) / "status" / "run" / f"{assignment}.json"


def load_status(course_root: Path, assignment: str) -> dict:
    path = status_path(course_root, assignment)
    return json.loads(path.read_text()) if path.exists() else {}


def load_run(course_root: Path, assignment: str) -> dict:
    """The last run's own status: {"conditions": [the machine's conditions, in words]}."""
    path = run_path(course_root, assignment)
    return json.loads(path.read_text()) if path.exists() else {}


def save_status(course_root: Path, assignment: str, results, hashes: dict | None = None,
                run: dict | None = None) -> Path:
    """Write every student's outcome of the last autograde run (read back by the report).
    `results`: objects with student, auto_score, auto_max, error, flags, seconds, skipped.

    The status is text for people (the report, the terminal): the folder name, the error and
    each flag's detail quote what a student wrote (file names, link targets, a rejected folder's
    name), so they are stored `shown` (grader.shown): no control character, no lone surrogate
    (which no page or terminal could write), whatever reads them. A valid student id is stored
    as it is."""
    path = status_path(course_root, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    old = load_status(course_root, assignment)
    for r in results:
        key = shown(r.student)
        entry = {"auto_score": r.auto_score, "auto_max": r.auto_max,
                 "error": None if r.error is None else shown(r.error),
                 "flags": [{**f, "detail": shown(f["detail"])} for f in r.flags],
                 "seconds": round(r.seconds, 3)}
        if r.skipped:
            entry["hash"] = old.get(key, {}).get("hash")
        elif hashes and r.student in hashes and not r.error:
            entry["hash"] = hashes[r.student]
        old[key] = entry
    write_atomic(path, json.dumps(old, indent=1, sort_keys=True))
    if run is not None:
        run_path(course_root, assignment).parent.mkdir(exist_ok=True)
        write_atomic(run_path(course_root, assignment), json.dumps(run, indent=1, sort_keys=True))
    return path
