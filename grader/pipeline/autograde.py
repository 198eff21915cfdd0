"""Autograde a folder of submissions, one student at a time, never stopping the batch.

Submissions use nbgrader's layout: DIR/STUDENT/ASSIGNMENT/NOTEBOOK.ipynb. They are copied into
the course's submitted/ folder (the originals are never touched) and graded by nbgrader.

The stages in order, each handing the next a value of grader.submission: stage 1 here
(`prepare`: grader.intake, grader.pipeline.sanitize, grader.nbgrader.execute.plan) gives a
Task; stage 2 in a pool (grader.pipeline.pools, grader.pipeline.scheduler) an Outcome; stage 3
here (grader.pipeline.grades.record, where every grade is written) a Result.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

from grader import intake
from grader.course import Course
from grader.files import folder_hash
from grader.intake import IntakeError
from grader.nbgrader import gradebook
from grader.nbgrader.api import api_for
from grader.nbgrader.release import release
from grader.pipeline import held, preflight
from grader.pipeline.grades import (
    has_submission,
    load_run,
    load_status,
    not_graded,
    record,
    save_status,
    scores,
)
from grader.pipeline.scheduler import MAX_ATTEMPTS, WATCHDOG_POLL, Scheduler
from grader.sandbox.confinement import confinement
from grader.shown import shown
from grader.submission import (
    Failed,
    Finished,
    Flag,
    Limits,
    Outcome,
    Result,
    Stuck,
    Task,
    flag,
    unique,
)

log = logging.getLogger(__name__)  # the progress lines (grader.cli shows them; -q hides them)


class _Lines(logging.Handler):
    """Hands each record's message, escaped (it quotes student ids), to a callable."""

    def __init__(self, say):
        super().__init__(logging.INFO)
        self.say = say

    def emit(self, record: logging.LogRecord) -> None:
        self.say(shown(record.getMessage()))


@contextlib.contextmanager
def progress_to(say):
    """While inside, hand each progress line of grading (the log of grader.pipeline at INFO)
    to `say` instead of the log's handlers: for a caller that shows them its own way (the demo,
    a test, a notebook). The CLI's own commands need it not: its logging shows them
    (grader.cli.logs.configure_logging), and its --quiet holds here too."""
    logger, handler = logging.getLogger("grader.pipeline"), _Lines(say)
    level, propagate = logger.level, logger.propagate
    if level == logging.NOTSET and not logger.isEnabledFor(logging.INFO):
        logger.setLevel(logging.INFO)  # (a level set on purpose, the CLI's --quiet, stays)
    logger.addHandler(handler)
    logger.propagate = False  # to `say` instead of the usual handlers, not as well
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


def _say(line: str) -> None:
    """One progress line; it quotes student ids and errors, so it is escaped here whoever
    handles the log (grader.shown)."""
    log.info("%s", shown(line))


def _is_released(course: Course, assignment: str) -> bool:
    if not course.has_gradebook:
        return False
    with course.gradebook() as gb:
        return gradebook.assignment(gb, assignment) is not None


def collected_submissions(course: Course, assignment: str,
                          students: dict) -> dict[str, Path | str]:
    """{student: their copy in course.submitted, or why it cannot be graded}, for what
    `python -m grader collect` took in from the exchange (`students`: its manifest's)."""
    if not students:
        raise FileNotFoundError(f"nothing of {assignment} was collected into {course.root}: run "
                                f"`python -m grader collect {assignment}` first")
    return {student: taken.get("error") or course.submitted / student / assignment
            for student, taken in sorted(students.items())}


def autograde(course: Course, assignment: str, submissions: Path | None,
              limits: Limits | None = None, workers: int | None = None,
              scheduler: str | None = None, force: bool = False,
              unconfined: bool = False) -> list[Result]:
    """Grade every student in `submissions`; returns one Result per student folder.
    submissions=None: grade what was collected from the exchange (`grader collect`), taken in
    already, with the time the exchange gave it.

    Three stages, each handing the next an explicit value: (1) here, intake copies the folder
    into the course and nbgrader's sanitizing steps make each notebook safe (`prepare`);
    (2) the notebooks execute in parallel, `workers` processes here (default: one per core) or
    the Dask cluster at `scheduler` (grader.pipeline.pools.execute); (3) here, nbgrader's autograde
    records the executed notebooks in the gradebook (grader.pipeline.grades.record; this process
    alone writes it).
    Submissions graded before and unchanged since are skipped unless `force`.
    limits: the limits of every notebook (default: Limits()); an assignment's own metadata
    overrides them (grader.metadata). Progress lines go to this module's logger, at INFO.
    """
    from grader.nbgrader.patches import shared_engines

    confinement(unconfined)  # no sandbox and not --unconfined: refuse before grading anyone

    with shared_engines():
        return _autograde(course, assignment, submissions, limits or Limits(), workers,
                          scheduler, force, unconfined)


def _autograde(course, assignment, submissions, limits, workers, scheduler, force,
               unconfined) -> list[Result]:
    from grader.pipeline.pools import make_pool, preload_for, sandbox_preload_for

    found, taken = _found(course, assignment, submissions)
    if not _is_released(course, assignment):
        _say(f"{assignment} was not released yet: releasing it first")
        release(course, assignment)
    api = api_for(course, limits=limits, unconfined=unconfined, recording=True)
    results: dict[str, Result] = {}
    hashes: dict[str, str] = {}
    todo = _to_grade(course, assignment, found, force, results, hashes)
    workers = min(workers or os.cpu_count() or 1, max(len(todo), 1))  # no idle processes
    # Started before stage 1: its processes import torch and start their sandboxes while this
    # process prepares the notebooks.
    preload = preload_for(course.source / assignment)
    sandbox = tuple(sandbox_preload_for(course.source / assignment))
    pool = make_pool(workers, scheduler, unconfined, preload, sandbox) if todo else None
    flags: dict[str, list[Flag]] = {}  # each student's flags from the stages so far
    try:
        tasks = _prepare_all(course, assignment, todo, limits, unconfined, taken, results, flags)
    except BaseException:
        if pool is not None:
            pool.kill()
        raise
    if pool is not None and not tasks:
        pool.close()
        pool = None
    if pool is not None:
        check = _preflight(course, assignment, limits, unconfined, scheduler)
        where = f"Dask cluster {scheduler}" if scheduler else f"{pool.workers} process(es)"
        _say(f"  executing {len(tasks)} submission(s) on {where}"
             + (", after the instructor's solution (the grader's own check)" if check else ""))
        runs = {preflight.SOURCE: check.task, **tasks} if check else tasks
        runner = Scheduler(lambda: make_pool(workers, scheduler, unconfined, preload, sandbox),
                           watchdog_seconds(runs, limits), poll=WATCHDOG_POLL,
                           max_attempts=MAX_ATTEMPTS)
        results.update(_execute_and_record(course, api, assignment, runner, runs, pool, flags,
                                           check))
    ordered = [results[s] for s in found]
    save_status(course.root, assignment, ordered, hashes,
                run={"conditions": confinement(unconfined).conditions(),
                     "held": held.hold(ordered, load_run(course.root, assignment).get("held",
                                                                                     []))})
    return ordered


def _found(course: Course, assignment: str,
           submissions: Path | None) -> tuple[dict[str, Path | str], dict]:
    """({student: their folder, or why it cannot be graded}; the collect's manifest entry of
    each student, when `submissions` is None: what `grader collect` took in)."""
    if submissions is None:
        from grader.nbgrader.collect import load_manifest

        taken = load_manifest(course, assignment)["students"]
        return collected_submissions(course, assignment, taken), taken
    return intake.find_submissions(Path(submissions), assignment), {}


def _to_grade(course: Course, assignment: str, found: dict[str, Path | str], force: bool,
              results: dict[str, Result], hashes: dict[str, str]) -> dict[str, Path]:
    """{student: the folder to grade}: the submissions that can be graded and are new or changed
    since the last run (or all of them if `force`). The others get their Result here (an
    error, or the grades of the last run), the folders their hash."""
    before = load_status(course.root, assignment)
    todo: dict[str, Path] = {}
    for student, folder in found.items():
        if isinstance(folder, str):
            results[student] = not_graded(course, assignment, student, folder, [])
            _say(f"  {student:<12} {_line(results[student])}")
            continue
        hashes[student] = folder_hash(folder)  # its timestamp too: a later one may be late
        old = before.get(student, {})
        if not force and old.get("hash") == hashes[student] and not old.get("error") \
                and has_submission(course, assignment, student):
            results[student] = Result(student, flags=old.get("flags", []), skipped=True,
                                      **scores(course, assignment, student))
            continue
        todo[student] = folder
    skipped = sum(r.skipped for r in results.values())
    if skipped:
        _say(f"  {skipped} unchanged submission(s) already graded: skipped (--force grades "
             "them again)")
    return todo


def _prepare_all(course: Course, assignment: str, todo: dict[str, Path], limits: Limits,
                 unconfined: bool, taken: dict, results: dict[str, Result],
                 flags: dict[str, list[Flag]]) -> dict[str, Task]:
    """Stage 1 for every student in `todo`: {student: the task for stage 2}; a submission that
    cannot be graded gets its Result here. Each student's flags so far go into `flags`."""
    tasks: dict[str, Task] = {}
    for student, folder in todo.items():
        try:
            tasks[student], flags[student] = prepare(course, assignment, student, folder, limits,
                                                     unconfined, taken.get(student))
        except NotGradable as e:
            flags[student] = e.flags
            results[student] = not_graded(course, assignment, student, str(e), e.flags)
            _say(f"  {student:<12} {_line(results[student])}")
    return tasks


def _execute_and_record(course: Course, api, assignment: str, runner: Scheduler,
                        tasks: dict[str, Task], pool, flags: dict[str, list[Flag]],
                        check: preflight.Check | None = None) -> dict[str, Result]:
    """Stages 2 and 3: `tasks` executed by `runner` on `pool`, each recorded as it ends, with a
    progress line; {student: their Result}. Every pool is closed when the run ends, however it
    ends."""
    results: dict[str, Result] = {}
    tally = _Tally(len(tasks) - (check is not None))
    waiting: list[Outcome] = []  # executed before the instructor's solution was: held till then
    with contextlib.closing(runner.run(tasks, pool)) as outcomes:
        for outcome in outcomes:
            if outcome.student == preflight.SOURCE:
                own = check.passed(outcome)  # or PreflightFailed: nothing of the class recorded
                check = None
                _say(f"  the instructor's solution earns {own.score:g} / {own.max_score:g} "
                     "here: recording the class")
                ready, waiting = waiting, []
            elif check is not None:
                waiting.append(outcome)
                continue
            else:
                ready = [outcome]
            for done in ready:
                student = done.student
                results[student] = _result_of(course, api, assignment, done, flags[student])
                tally.report(results[student])
    return results


def _preflight(course: Course, assignment: str, limits: Limits, unconfined: bool,
               scheduler: str | None) -> preflight.Check | None:
    """The instructor's solution to execute before any student is recorded; None when a
    verdict that passed is cached for this environment and source (grader.pipeline.preflight)."""
    digest = preflight.key(course, assignment, limits, unconfined, scheduler)
    if preflight.cached(digest):
        return None
    return preflight.Check(course, assignment, digest,
                           preflight.task(course, assignment, limits, unconfined))


def _result_of(course: Course, api, assignment: str, outcome: Outcome,
               flags: list[Flag]) -> Result:
    """Stage 3 for one student: what stage 2's outcome records (`flags`: the student's so far,
    a stuck submission's flag added to them)."""
    match outcome:
        case Finished(student, result):
            return record(course, api, assignment, student, result, flags)
        case Failed(student, error):
            return not_graded(course, assignment, student, error, flags, infrastructure=True)
        case Stuck(student, seconds):
            flags.append(flag("stuck", f"grading did not end within {seconds:.0f} s; the run was "
                              "stopped and the rest of the class graded"))
            return not_graded(
                course, assignment, student,
                f"not graded: still running after {seconds:.0f} s, past every limit "
                "(stopped by the watchdog; see the flags)", flags)
    raise TypeError(f"not an outcome: {outcome!r}")


class _Tally:
    """Each graded submission's progress line: how many so far, of how many, the time left."""

    def __init__(self, total: int):
        self.total, self.count = total, 0
        self.started = time.monotonic()

    def report(self, result: Result) -> None:
        """Print the progress line of one more submission graded."""
        self.count += 1
        elapsed = time.monotonic() - self.started
        left = self.total - self.count
        eta = f", ~{elapsed / self.count * left:.0f} s left" if left else ""
        _say(f"  [{self.count}/{self.total} {self.count / self.total:4.0%}{eta}] "
             f"{result.student:<12} {_line(result)}")


class NotGradable(Exception):
    """A submission stage 1 cannot make gradable; the message says why, naming the file and the
    problem, and `flags` are the student's flags so far."""

    def __init__(self, reason: str, flags: list[Flag]):
        super().__init__(reason)
        self.flags = flags


def prepare(course: Course, assignment: str, student: str, folder: Path, limits: Limits,
            unconfined: bool, collected: dict | None = None) -> tuple[Task, list[Flag]]:
    """Stage 1 for one student: the intake (grader.intake: the folder copied into
    course.submitted/STUDENT/ASSIGNMENT by content, links, FIFOs, devices, outside hard links
    and the student's timestamp.txt left out and flagged, and its notebooks checked), then
    nbgrader's sanitizing steps. Returns the task for stage 2 and the flags so far; raises
    NotGradable. collected: the collect's manifest entry of a submission it took in already
    (grader.nbgrader.collect)."""
    from grader.nbgrader.execute import plan
    from grader.pipeline.sanitize import sanitize

    taken = [] if collected is None else collected.get("flags", [])  # collect's flags
    try:
        if collected is None:
            flags = intake.admit(course, assignment, student, Path(folder))
        else:
            flags = taken + intake.check_notebooks(course, assignment, folder, folder,
                                                   collected.get("left_out", {}))
    except IntakeError as e:
        raise NotGradable(str(e), e.flags or taken) from None
    try:
        notebooks, more = sanitize(course, assignment, student)
        work = plan(course.root, assignment, student, limits)
    except Exception as e:  # a notebook nbgrader cannot read or sanitize: the student's file
        raise NotGradable(f"could not be read: {type(e).__name__}: {e}", []) from None
    # (the confinement's own flags come with the execution: judge.Judge adds them)
    return Task(assignment, student, notebooks, work, unconfined), unique(flags + more + work.flags)


WATCHDOG_SLACK = 120.0  # seconds of start-up and recording on top of the notebook limits


def watchdog_seconds(tasks: dict, limits: Limits) -> float:
    """How long one submission may run in the pool before it counts as stuck: its notebooks'
    whole time limits (each notebook's own, which its assignment's metadata may have set),
    plus slack. The sandbox enforces each limit itself; the watchdog only catches what those
    cannot (a wedged pool process)."""
    default = limits.notebook_timeout

    def whole(task) -> float:
        own = task.plan.limits if task.plan is not None else {}
        return sum(own[name].notebook_timeout if name in own else default
                   for name in task.notebooks)

    return max((whole(t) for t in tasks.values()), default=default) + WATCHDOG_SLACK


def _line(r: Result) -> str:
    line = f"{r.auto_score:g} / {r.auto_max:g} autograded"
    if r.max_score > r.auto_max:
        line += f", {r.max_score - r.auto_max:g} more points for written answers"
    if r.flags:
        line += f"  [{len(r.flags)} flag{'s' * (len(r.flags) > 1)}: " + ", ".join(
            sorted({f['kind'] for f in r.flags})) + "]"
    return line + (f"  ERROR: {r.error}" if r.error else "")
