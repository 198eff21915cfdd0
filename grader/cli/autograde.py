"""`python -m grader autograde`: grade what was submitted (grader.pipeline.autograde), after
checking everything that could stop the run, and say what was done."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from grader.cli.common import (
    DONE,
    EXIT_STATUSES,
    HELD,
    INCOMPLETE,
    RETRY,
    STOPPED,
    add_command,
    course_of,
    gradebook_named,
    known,
    positive,
    print_error,
)
from grader.course import CELL_TIMEOUT
from grader.shown import shown
from grader.startup.collector import paused


def add_parser(sub) -> argparse.ArgumentParser:
    s = add_command(sub, "autograde", "grade submitted notebooks", epilog=EXIT_STATUSES,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("assignment")
    s.add_argument("--submissions",
                   help="folder laid out as STUDENT/ASSIGNMENT/NOTEBOOK.ipynb (default: what "
                        "`collect` took in, from the exchange or an LMS's archive)")
    s.add_argument("--cell-timeout", type=positive(float),
                   help="seconds of CPU time allowed per cell (and per call from a test); a "
                        "cell that waits or sleeps is stopped at 3 times that in wall-clock "
                        f"time (default: {CELL_TIMEOUT}; limits in the assignment's own "
                        "metadata win over these options)")
    s.add_argument("--notebook-timeout", type=positive(float),
                   help="seconds a whole notebook may run (default: 900)")
    s.add_argument("--memory", type=_bytes, help="memory per submission, e.g. 4G (default: 6G)")
    s.add_argument("--workers", type=positive(int),
                   help="notebooks executed at once on this machine (default: one per core)")
    s.add_argument("--scheduler", help="tcp://HOST:PORT of a Dask scheduler: execute the "
                                       "notebooks on that cluster instead (default: none, "
                                       "this machine)")
    s.add_argument("--force", action="store_true",
                   help="grade again submissions that are unchanged since the last run")
    s.add_argument("--unconfined", action="store_true",
                   help="grade even where the sandbox (bubblewrap) cannot be built; every "
                        "submission is then flagged 'unconfined'. Never for untrusted code")
    return s


def run(args) -> int:
    course = course_of(args)
    known(course, args.assignment)
    submissions = Path(args.submissions) if args.submissions else None
    if submissions is not None and not submissions.is_dir():
        raise FileNotFoundError(f"submissions folder {submissions} does not exist")
    if _a_class(args):
        from grader.pipeline.pools import preload_for, start_fork_server

        # importing torch there while this process imports nbgrader
        start_fork_server(preload_for(course.source / args.assignment))
    with paused():  # nbgrader's imports (grader.startup.collector)
        from grader.pipeline.autograde import autograde

    from grader.nbgrader.late import load_policy
    from grader.pipeline.preflight import PreflightFailed
    from grader.sandbox.confinement import confinement
    from grader.sandbox.namespaces import IsolationUnavailable

    limits = _limits(args)
    _something_to_grade(course, args.assignment, submissions)
    late = load_policy(course.root, args.assignment)  # the instructor's late penalty, if any
    try:
        confined = confinement(args.unconfined)
    except IsolationUnavailable as e:
        print(f"error: {shown(e)}", file=sys.stderr)
        return STOPPED
    print(f"Autograding {shown(args.assignment)} from "
          f"{shown(submissions or 'what `collect` took in (the exchange, or an LMS archive)')}")
    print(f"  isolation: {confined.describe()}")
    if late is not None:
        print(f"  late penalty: {late.describe()} (`release --late-penalty` changes it)")
    start = time.monotonic()
    try:
        results = autograde(course, args.assignment, submissions, limits=limits,
                            workers=args.workers, scheduler=args.scheduler, force=args.force,
                            unconfined=args.unconfined)
    except PreflightFailed as e:  # (its lines, each escaped: the errors quote the notebook)
        print_error(e)
        return HELD
    return _summary(course, args.assignment, results, time.monotonic() - start)


def _limits(args):
    """The run's limits: the defaults, with the options given over them."""
    from grader.submission import Limits

    return Limits().updated({k: v for k, v in (("cell_timeout", args.cell_timeout),
                                               ("notebook_timeout", args.notebook_timeout),
                                               ("memory_bytes", args.memory))
                             if v is not None})


def _something_to_grade(course, assignment: str, submissions: Path | None) -> None:
    """Raise (before the banner) when there is nothing to grade: an empty folder, nothing
    collected."""
    from grader.intake import find_submissions
    from grader.pipeline.autograde import collected_submissions

    if submissions is not None:
        find_submissions(submissions, assignment)
    else:
        from grader.nbgrader.collect import load_manifest

        collected_submissions(course, assignment, load_manifest(course, assignment)["students"])


def _summary(course, assignment: str, results, seconds: float) -> int:
    """Print what the run did, and where its grades are; its exit status."""
    from grader.pipeline.grades import load_run, status_path
    from grader.pipeline.held import describe

    errors = [r for r in results if r.error]
    infra = [r for r in errors if r.infrastructure]
    flagged = [r for r in results if r.flags]
    skipped = [r for r in results if r.skipped]
    print(f"Summary: {len(results) - len(errors) - len(skipped)} graded, {len(skipped)} "
          f"unchanged and skipped, {len(errors)} could not be graded ({len(infra)} of them by "
          f"a failure of the grader, to retry), {len(flagged)} flagged for review; "
          f"{seconds:.0f} s.")
    print(f"Grades in the gradebook ({gradebook_named(course)}); graded notebooks in "
          f"{course.autograded}/STUDENT/{assignment}/; every row and flag in "
          f"{status_path(course.root, assignment)}")
    if infra:
        print(f"{len(infra)} submission(s) not graded by a failure of the grader: run the same "
              "command again to retry them (exit status 3)", file=sys.stderr)
        return RETRY
    held = load_run(course.root, assignment).get("held")
    if held:
        print("\n".join(shown(line) for line in describe(assignment, held)), file=sys.stderr)
        return HELD
    if errors:
        print(f"{len(errors)} submission(s) could not be graded: see their ERROR rows above "
              "(exit status 1)", file=sys.stderr)
        return INCOMPLETE
    return DONE


def _a_class(args) -> bool:
    """Whether a pool of this machine's processes will likely grade (more than one submission
    folder, or what was collected from the exchange): counted before nbgrader is imported."""
    if args.scheduler is not None or (args.workers or os.cpu_count() or 1) == 1:
        return False
    if not args.submissions:
        return True
    try:
        with os.scandir(args.submissions) as entries:
            return sum(e.is_dir(follow_symlinks=False) for e in entries) > 1
    except OSError:
        return False  # autograde says what is wrong with the folder


def _bytes(text: str) -> int:
    """'4G', '512M' or a number of bytes."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    text = text.strip().upper().removesuffix("B")
    try:
        size = int(float(text[:-1]) * units[text[-1]]) if text and text[-1] in units else \
            int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size like 4G or 512M") from None
    if size <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0")
    return size
