"""Autograde a folder of submissions, one student at a time, never stopping the batch.

Submissions use nbgrader's layout: DIR/STUDENT/ASSIGNMENT/NOTEBOOK.ipynb. They are copied into
the course's submitted/ folder (the originals are never touched) and graded by nbgrader.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from grader import intake
from grader.course import COURSE_ID, Course
from grader.nbgrader.api import api_for, reason
from grader.nbgrader.release import release
from grader.pipeline.pools import Task, fingerprint
from grader.record import flag, load_status, save_status, status_path, unique
from grader.shown import shown

__all__ = ["Result", "autograde", "load_status", "save_status", "status_path"]


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
    skipped: bool = False  # graded in an earlier run and unchanged since
    infrastructure: bool = False  # the error was the grader's, not the student's
    seconds: float = 0.0  # time to execute the notebook
    executed_by: str = ""  # host:pid of the process that executed it

    @property
    def status(self) -> str:
        return "error" if self.error else "graded"


def find_submissions(submissions: Path, assignment: str) -> dict[str, Path | str]:
    """{student: their assignment folder, or the reason it is unusable}; folders that are
    links or over the intake's limits are reasons (see grader.intake)."""
    return intake.find_submissions(Path(submissions), assignment)


def _scores(course: Course, assignment: str, student: str) -> dict:
    """The student's scores in the gradebook; zero for one without a submission, who is added
    to the gradebook (so the export lists them, with zero) when `student` is a valid id. A
    folder whose name is not one is no student: it gets a row in the run's status alone."""
    with Gradebook(course.db_url, COURSE_ID) as gb:
        if intake.is_student_id(student):
            try:
                sub = gb.find_submission(assignment, student)
                return dict(score=sub.score, max_score=sub.max_score, auto_score=sub.code_score,
                            auto_max=sub.max_code_score, needs_manual=sub.needs_manual_grade)
            except MissingEntry:
                gb.update_or_create_student(student)
        a = gb.find_assignment(assignment)
        return dict(score=0.0, max_score=a.max_score, auto_score=0.0, auto_max=a.max_code_score)


def _is_released(course: Course, assignment: str) -> bool:
    if not course.has_gradebook:
        return False
    with Gradebook(course.db_url, COURSE_ID) as gb:
        try:
            gb.find_assignment(assignment)
            return True
        except MissingEntry:
            return False


def collected_submissions(course: Course, assignment: str,
                          students: dict) -> dict[str, Path | str]:
    """{student: their copy in course.submitted, or why it cannot be graded}, for what
    `python -m grader collect` took in from the exchange (`students`: its record)."""
    if not students:
        raise FileNotFoundError(f"nothing of {assignment} was collected into {course.root}: run "
                                f"`python -m grader collect {assignment}` first")
    return {student: taken.get("error") or course.submitted / student / assignment
            for student, taken in sorted(students.items())}


def autograde(course: Course, assignment: str, submissions: Path | None, progress=print,
              limits: dict | None = None, workers: int | None = None,
              scheduler: str | None = None, force: bool = False,
              unconfined: bool = False) -> list[Result]:
    """Grade every student in `submissions`; returns one Result per student folder.
    submissions=None: grade what was collected from the exchange (`grader collect`), taken in
    already, with the time the exchange gave it.

    Three stages, each handing the next an explicit value: (1) here, intake copies the folder
    into the course and nbgrader's sanitizing steps make each notebook safe (`prepare`);
    (2) the notebooks execute in parallel, `workers` processes here (default: one per core) or
    the Dask cluster at `scheduler` (grader.pipeline.pools.execute); (3) here, nbgrader's autograde
    records the executed notebooks in the gradebook (`record`; this process alone writes it).
    Submissions graded before and unchanged since are skipped unless `force`.
    limits: overrides of grader.sandbox.session.Limits (cell_timeout, memory_bytes, ...).
    """
    from grader.sandbox.session import confinement
    from grader.startup.engines import shared_engines

    confinement(unconfined)  # no sandbox and not --unconfined: refuse before grading anyone

    def say(line: str) -> None:  # every line quotes student ids or errors: escaped
        progress(shown(line))

    with shared_engines():
        return _autograde(course, assignment, submissions, say, limits, workers,
                          scheduler, force, unconfined)


def _autograde(course, assignment, submissions, progress, limits, workers, scheduler, force,
               unconfined) -> list[Result]:
    from grader.pipeline.pools import make_pool, preload_for, sandbox_preload_for
    from grader.startup import notebook_schema

    notebook_schema.install()  # stage 1 and record check every notebook against the schema
    if submissions is None:
        from grader.nbgrader.collect import load_record

        taken = load_record(course, assignment)["students"]
        found = collected_submissions(course, assignment, taken)
    else:
        found, taken = find_submissions(Path(submissions), assignment), {}
    if not _is_released(course, assignment):
        progress(f"{assignment} was not released yet: releasing it first")
        release(course, assignment)
    api = api_for(course, limits=limits, unconfined=unconfined, recording=True)
    before = load_status(course.root, assignment)
    results: dict[str, Result] = {}
    tasks: dict[str, Task] = {}
    flags: dict[str, list[dict]] = {}  # each student's flags from the stages so far
    hashes: dict[str, str] = {}
    todo: dict[str, Path] = {}  # student -> the folder to grade
    for student, folder in found.items():
        if isinstance(folder, str):
            results[student] = _error_result(course, assignment, student, folder, [])
            progress(f"  {student:<12} {_line(results[student])}")
            continue
        hashes[student] = fingerprint(folder)
        old = before.get(student, {})
        if not force and old.get("hash") == hashes[student] and not old.get("error") \
                and _has_submission(course, assignment, student):
            results[student] = Result(student, flags=old.get("flags", []), skipped=True,
                                      **_scores(course, assignment, student))
            continue
        todo[student] = folder
    skipped = sum(r.skipped for r in results.values())
    if skipped:
        progress(f"  {skipped} unchanged submission(s) already graded: skipped (--force "
                 "grades them again)")
    workers = min(workers or os.cpu_count() or 1, max(len(todo), 1))  # no idle processes
    # Started before stage 1: its processes import torch and start their sandboxes while this
    # process prepares the notebooks.
    preload = preload_for(course.source / assignment)
    sandbox = tuple(sandbox_preload_for(course.source / assignment))
    pool = make_pool(workers, scheduler, unconfined, preload, sandbox) if todo else None
    try:
        for student, folder in todo.items():
            task, error, flags[student] = prepare(course, assignment, student, folder, limits,
                                                  unconfined, taken.get(student))
            if error:
                results[student] = _error_result(course, assignment, student, error,
                                                 flags[student])
                progress(f"  {student:<12} {_line(results[student])}")
            else:
                tasks[student] = task
    except BaseException:
        if pool is not None:
            pool.kill()
        raise
    if pool is not None and not tasks:
        pool.close()
        pool = None
    total, count = len(tasks), 0
    if pool is not None:
        where = f"Dask cluster {scheduler}" if scheduler else f"{pool.workers} process(es)"
        progress(f"  executing {total} submission(s) on {where}")
    attempts = {student: 0 for student in tasks}
    started = time.monotonic()
    running = {}
    since: dict[str, float] = {}  # when each running submission was handed to the pool
    restarts = 0  # of the pool, after it broke
    bound = watchdog_seconds(tasks, limits)

    def submit(student):
        attempts[student] += 1
        running[pool.submit(tasks[student])] = student
        since[student] = time.monotonic()

    def report(student):
        nonlocal count
        count += 1
        elapsed = time.monotonic() - started
        eta = f", ~{elapsed / count * (total - count):.0f} s left" if count < total else ""
        progress(f"  [{count}/{total} {count / total:4.0%}{eta}] {student:<12} "
                 f"{_line(results[student])}")

    try:
        for student in tasks:
            submit(student)
        while running:
            try:
                finished = pool.done(set(running), timeout=WATCHDOG_POLL)
            except Exception as e:  # the pool itself broke: start a new one, resubmit
                restarts += 1
                waiting, running = list(running.values()), {}
                if restarts > MAX_ATTEMPTS:  # it keeps breaking: the grader's failure, reported
                    for student in waiting:
                        results[student] = _error_result(
                            course, assignment, student,
                            f"not graded: the worker pool failed {restarts} times "
                            f"({type(e).__name__}: {e}); this is not the student's fault, run "
                            "autograde again to retry", flags[student], infrastructure=True)
                        report(student)
                    break
                progress(f"  worker pool failed ({type(e).__name__}: {e}); restarting it")
                with contextlib.suppress(Exception):
                    pool.close()
                pool = make_pool(workers, scheduler, unconfined, preload, sandbox)
                for student in waiting:
                    submit(student)
                continue
            stuck = [s for s in running.values() if time.monotonic() - since[s] > bound]
            if stuck and not finished:
                # A submission that outlives every limit has wedged its pool process: end the
                # pool (sandboxes die with it), record the stuck ones, resubmit the others.
                progress(f"  watchdog: {', '.join(stuck)} still running after {bound:.0f} s; "
                         "stopping them and restarting the pool")
                pool.kill()
                pool = make_pool(workers, scheduler, unconfined, preload, sandbox)
                waiting, running = list(running.values()), {}
                for student in waiting:
                    if student in stuck:
                        flags[student].append(flag(
                            "stuck", f"grading did not end within {bound:.0f} s; the run was "
                            "stopped and the rest of the class graded"))
                        results[student] = _error_result(
                            course, assignment, student,
                            f"not graded: still running after {bound:.0f} s, past every limit "
                            "(stopped by the watchdog; see the flags)", flags[student])
                        report(student)
                    else:
                        attempts[student] -= 1  # not their fault: this attempt does not count
                        submit(student)
                continue
            for future in finished:
                student = running.pop(future)
                try:
                    outcome = future.result()
                except Exception as e:  # infrastructure, not the student: try again
                    if attempts[student] < MAX_ATTEMPTS:
                        progress(f"  {student}: {type(e).__name__} ({e}); retrying")
                        with contextlib.suppress(Exception):
                            submit(student)
                            continue
                    results[student] = _error_result(
                        course, assignment, student,
                        f"not graded: the grading machinery failed {attempts[student]} times "
                        f"({type(e).__name__}: {e}); this is not the student's fault, run "
                        "autograde again to retry", flags[student], infrastructure=True)
                else:
                    results[student] = record(course, api, assignment, student, outcome,
                                              flags[student])
                report(student)
    finally:
        if pool is not None:
            pool.close()
    ordered = [results[s] for s in found]
    from grader.sandbox.session import confinement

    save_status(course.root, assignment, ordered, hashes,
                run={"conditions": confinement(unconfined).conditions()})
    return ordered


def prepare(course: Course, assignment: str, student: str, folder: Path,
            limits: dict | None, unconfined: bool,
            collected: dict | None = None) -> tuple[Task | None, str | None, list]:
    """Stage 1 for one student: intake, then nbgrader's sanitizing steps. Returns (the task
    for stage 2, or None and why the submission cannot be graded; the flags so far).
    collected: the collect's record of a submission it took in already (grader.nbgrader.collect)."""
    from grader.nbgrader.execute import plan
    from grader.pipeline.sanitize import sanitize

    try:
        if collected is None:
            error, flags = _copy_and_check(course, assignment, student, folder)
        else:
            error, more = intake.check_notebooks(course, assignment, folder, folder,
                                                 collected.get("left_out", {}))
            flags = collected.get("flags", []) + more
        if error:
            return None, error, flags
        notebooks, more = sanitize(course, assignment, student)
        work = plan(course.root, assignment, student, limits)
    except Exception as e:  # a notebook nbgrader cannot read or sanitize: the student's file
        return None, f"could not be read: {type(e).__name__}: {e}", []
    # (the confinement's own flags come with the execution: judge.Judge adds them)
    flags = unique(flags + more + work.flags)
    return Task(assignment, student, notebooks, work, unconfined), None, flags


MAX_ATTEMPTS = 3
WATCHDOG_POLL = 5.0  # seconds between two looks at the running submissions
WATCHDOG_SLACK = 120.0  # seconds of start-up and recording on top of the notebook limits


def watchdog_seconds(tasks: dict, limits: dict | None) -> float:
    """How long one submission may run in the pool before it counts as stuck: its notebooks'
    whole time limits, plus slack. The sandbox enforces each limit itself; the watchdog only
    catches what those cannot (a wedged pool process)."""
    from grader.sandbox.session import Limits

    default = (limits or {}).get("notebook_timeout") or Limits().notebook_timeout

    def whole(task) -> float:  # each notebook's own limit: the assignment's metadata wins
        own = task.plan.limits if task.plan is not None else {}
        return sum(own.get(name, {}).get("notebook_timeout") or default
                   for name in task.notebooks)

    return max((whole(t) for t in tasks.values()), default=default) + WATCHDOG_SLACK


def record(course: Course, api, assignment: str, student: str, outcome: dict,
           flags: list[dict]) -> Result:
    """Stage 3 for one student: the executed notebooks left where LoadExecuted finds them, then
    nbgrader's autograde (this process is the only gradebook writer)."""
    from grader.nbgrader.execute import executed_path

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
                  executed_by=outcome["executed_by"], **_scores(course, assignment, student))


def _error_result(course, assignment, student, error, flags, infrastructure=False) -> Result:
    return Result(student, error=error, infrastructure=infrastructure, flags=unique(flags),
                  **_scores(course, assignment, student))


def _has_submission(course: Course, assignment: str, student: str) -> bool:
    with Gradebook(course.db_url, COURSE_ID) as gb:
        try:
            gb.find_submission(assignment, student)
            return True
        except MissingEntry:
            return False


def _copy_and_check(course: Course, assignment: str, student: str,
                    folder: Path) -> tuple[str | None, list[dict]]:
    """Copy the submission into course.submitted/STUDENT/ASSIGNMENT by content (links, FIFOs,
    devices, outside hard links and the student's timestamp.txt left out and flagged) and check
    its notebooks: (None when it can be graded, else the reason; the intake's flags)."""
    return intake.admit(course, assignment, student, Path(folder))


def _line(r: Result) -> str:
    line = f"{r.auto_score:g} / {r.auto_max:g} autograded"
    if r.max_score > r.auto_max:
        line += f", {r.max_score - r.auto_max:g} more points for written answers"
    if r.flags:
        line += f"  [{len(r.flags)} flag{'s' * (len(r.flags) > 1)}: " + ", ".join(
            sorted({f['kind'] for f in r.flags})) + "]"
    return line + (f"  ERROR: {r.error}" if r.error else "")
