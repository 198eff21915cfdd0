"""`python -m grader`: release, collect, autograde, feedback, report, export, check, demo, lab,
hub."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

from grader.collector import paused
from grader.course import DEFAULT_COURSE, Course
from grader.shown import install_log_escaping, shown


def _course(args) -> Course:
    """The course named by --course/--exchange, else by $GRADER_COURSE/$GRADER_EXCHANGE (set in
    the instructor's server on the hub), else build/course."""
    root = args.course or os.environ.get("GRADER_COURSE")
    course = Course.at(Path(root).resolve()) if root else DEFAULT_COURSE
    exchange = getattr(args, "exchange", None) or os.environ.get("GRADER_EXCHANGE")
    if exchange:
        course = dataclasses.replace(course, shared_exchange=Path(exchange))
    if getattr(args, "db", None):
        course = dataclasses.replace(course, db=args.db)
    return course


def cmd_release(args) -> int:
    from grader.release import publish, release

    course = _course(args)
    for assignment in args.assignments or course.assignments():
        print(f"{assignment}: student version in {release(course, assignment, due=args.due)}")
        if args.publish:
            print(f"{assignment}: published to {publish(course, assignment)}, where "
                  "students fetch it")
    return 0


def _due(text: str):
    """'2026-12-01 17:00' or an ISO date and time with a zone; a time without one is UTC."""
    from datetime import UTC, datetime

    try:
        due = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date and time like 2026-12-01 17:00 or 2026-12-01T17:00+01:00"
        ) from None
    return due.replace(tzinfo=UTC) if due.tzinfo is None else due


def cmd_collect(args) -> int:
    from grader.collect import collect

    record = collect(_course(args), args.assignment)
    for student, taken in sorted(record["students"].items()):
        line = taken.get("error") or f"submitted {taken['time']} ({taken['folder']})"
        flags = f"  [{len(taken['flags'])} file(s) left out]" if taken.get("flags") else ""
        print(f"  {shown(student):<12} {shown(line)}{flags}")
    for refused in record["refused"]:
        print(f"  REFUSED {shown(refused['folder'])}: it {shown(refused['why'])}")
    taken = sum("error" not in t for t in record["students"].values())
    print(f"{taken} submission(s) collected, {len(record['students']) - taken} could not be; "
          f"{len(record['refused'])} refused.")
    return 0


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


def cmd_autograde(args) -> int:
    if _a_class(args):
        from grader.parallel import preload_for, start_fork_server

        # importing torch there while this process imports nbgrader
        start_fork_server(preload_for(_course(args).source / args.assignment))
    with paused():  # nbgrader's imports (grader.collector)
        from grader.autograde import autograde

    limits = {k: v for k, v in (("cell_timeout", args.cell_timeout),
                                ("notebook_timeout", args.notebook_timeout),
                                ("memory_bytes", args.memory)) if v is not None}
    from grader.sandbox.namespaces import IsolationUnavailable
    from grader.sandbox.session import confinement

    try:
        confined = confinement(args.unconfined)
    except IsolationUnavailable as e:
        print(f"error: {shown(e)}", file=sys.stderr)
        return 2
    submissions = Path(args.submissions) if args.submissions else None
    print(f"Autograding {shown(args.assignment)} from "
          f"{shown(submissions or 'what was collected from the exchange')}")
    print(f"  isolation: {confined.describe()}")
    start = time.monotonic()
    results = autograde(_course(args), args.assignment, submissions, limits=limits,
                        workers=args.workers, scheduler=args.scheduler, force=args.force,
                        unconfined=args.unconfined)
    errors = [r for r in results if r.error]
    infra = [r for r in errors if r.infrastructure]
    flagged = [r for r in results if r.flags]
    skipped = [r for r in results if r.skipped]
    print(f"Summary: {len(results) - len(errors) - len(skipped)} graded, {len(skipped)} "
          f"unchanged and skipped, {len(errors)} could not be graded ({len(infra)} of them by "
          f"a failure of the grader, to retry), {len(flagged)} flagged for review; "
          f"{time.monotonic() - start:.0f} s.")
    return 1 if infra else 0


def _bytes(text: str) -> int:
    """'4G', '512M' or a number of bytes."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    text = text.strip().upper().removesuffix("B")
    try:
        if text and text[-1] in units:
            return int(float(text[:-1]) * units[text[-1]])
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size like 4G or 512M") from None


def cmd_feedback(args) -> int:
    from grader.feedback import feedback

    course = _course(args)
    pages = feedback(course, args.assignment, to=Path(args.to) if args.to else None)
    for student, result in pages.items():
        where = result if isinstance(result, str) else ", ".join(str(p) for p in result)
        print(f"  {shown(student):<12} {shown(where)}")
    failed = any(isinstance(r, str) for r in pages.values())
    if args.publish:
        from grader.feedback import publish_feedback

        for student, why in publish_feedback(course, args.assignment).items():
            print(f"  {shown(student):<12} "
                  f"{'published' if why is None else 'NOT published: ' + shown(why)}")
            failed = failed or why is not None
        print(f"feedback in the exchange ({course.exchange}): each student fetches their own "
              "from the assignment list")
    return 1 if failed else 0


def cmd_report(args) -> int:
    from grader.report import report

    to = Path(args.to or f"{args.assignment}-report.html")
    feedback_dir = Path(args.feedback) if args.feedback else None
    written = report(_course(args), args.assignment, to, feedback_dir)
    print(f"class report written to {shown(written)}")
    return 0


def cmd_export(args) -> int:
    from grader.export import export

    roster = Path(args.roster) if args.roster else None
    to = export(_course(args), Path(args.to), args.format, roster)
    print(f"grades written to {shown(to)} ({args.format} format)")
    return 0


def cmd_check(args) -> int:
    from grader.check import report, run_visible_tests

    results = run_visible_tests(Path(args.notebook), timeout=args.timeout)
    print(report(results, Path(args.notebook)))
    return 0 if all(r.passed for r in results) else 1


def cmd_demo(args) -> int:
    from grader.demo.run import meets_expectation, run_demo

    rows = run_demo()
    if all(meets_expectation(s, r) for table in rows.values() for s, r in table):
        print("\nEvery sample student got the score their story predicts.")
        return 0
    print("\nSome sample students did not get the expected score (marked NO above).")
    return 1


def cmd_lab(args) -> int:
    from grader.lab import lab

    return lab(_course(args), args.jupyter_args)


def cmd_hub(args) -> int:
    from grader.hub import command, install
    from grader.hub.layout import Hub

    hub = Hub(root=Path(args.root), instructor=args.instructor,
              students=tuple(s for s in args.students.split(",") if s), port=args.port)
    print(f"Setting up the course hub in {hub.root} (first time: a few minutes)...", flush=True)
    accounts = install(hub)
    print(f"\nThe course hub: {hub.url}  (accounts also in {hub.accounts_file})")
    for user, password in accounts.items():
        role = "instructor" if user == hub.instructor else "student"
        print(f"  {role:<10}  user {user:<12} password {password}")
    if args.setup_only:
        return 0
    cmd, env = command(hub)
    print("Ctrl-C stops the hub and every server.", flush=True)
    os.chdir(hub.state)
    os.execve(cmd[0], cmd, env)
    return 0  # not reached


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m grader", description=__doc__)
    p.add_argument("--course", help="nbgrader course directory (default: build/course)")
    p.add_argument("--db", help="gradebook database URL, e.g. postgresql://user@host/grades "
                                "(default: sqlite in the course directory)")
    p.add_argument("--exchange", help="nbgrader exchange shared with the students (on a hub; "
                                      "default: $GRADER_EXCHANGE, else one inside the course)")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("release", help="make student versions of assignments")
    s.add_argument("assignments", nargs="*", help="default: every assignment")
    s.add_argument("--due", type=_due, help="due date, e.g. '2026-12-01 17:00' (UTC unless a "
                                            "zone is given); later submissions are marked late")
    s.add_argument("--publish", action="store_true",
                   help="also put it in the exchange, where students fetch it")
    s.set_defaults(run=cmd_release)

    s = sub.add_parser("collect", help="take the latest submissions in from the exchange")
    s.add_argument("assignment")
    s.set_defaults(run=cmd_collect)

    s = sub.add_parser("autograde", help="grade submitted notebooks")
    s.add_argument("assignment")
    s.add_argument("--submissions",
                   help="folder laid out as STUDENT/ASSIGNMENT/NOTEBOOK.ipynb (default: what "
                        "`collect` took in from the exchange)")
    s.add_argument("--cell-timeout", type=float,
                   help="seconds one cell may run (default 120, or the assignment's own)")
    s.add_argument("--notebook-timeout", type=float,
                   help="seconds a whole notebook may run (default 900)")
    s.add_argument("--memory", type=_bytes, help="memory per submission, e.g. 4G (default 6G)")
    s.add_argument("--workers", type=int,
                   help="notebooks executed at once on this machine (default: one per core)")
    s.add_argument("--scheduler", help="tcp://HOST:PORT of a Dask scheduler: execute the "
                                       "notebooks on that cluster instead")
    s.add_argument("--force", action="store_true",
                   help="grade again submissions that are unchanged since the last run")
    s.add_argument("--unconfined", action="store_true",
                   help="grade even where the sandbox (bubblewrap) cannot be built; every "
                        "submission is then flagged 'unconfined'. Never for untrusted code")
    s.set_defaults(run=cmd_autograde)

    s = sub.add_parser("feedback", help="feedback HTML for autograded students")
    s.add_argument("assignment")
    s.add_argument("--to", help="also copy the pages here as STUDENT.html")
    s.add_argument("--publish", action="store_true",
                   help="also put them in the exchange, where each student fetches their own")
    s.set_defaults(run=cmd_feedback)

    s = sub.add_parser("report", help="(instructors) one HTML page on how the class did")
    s.add_argument("assignment")
    s.add_argument("--to", help="default: ASSIGNMENT-report.html")
    s.add_argument("--feedback", help="folder of STUDENT.html feedback pages to link to")
    s.set_defaults(run=cmd_report)

    s = sub.add_parser("export", help="grades as CSV: nbgrader's format, or for Canvas or Moodle")
    s.add_argument("--format", choices=("nbgrader", "canvas", "moodle"), default="nbgrader",
                   help="nbgrader: one row per student and assignment (default); canvas: "
                        "for Canvas's Grades > Import; moodle: for Moodle's Import > CSV file")
    s.add_argument("--to", default="grades.csv")
    s.add_argument("--roster", help="(canvas) a gradebook CSV exported from Canvas: students "
                                    "are matched on SIS Login ID, SIS User ID or ID")
    s.set_defaults(run=cmd_export)

    s = sub.add_parser("check", help="(students) run a notebook's visible tests")
    s.add_argument("notebook")
    s.add_argument("--timeout", type=int, default=120, help="seconds per cell")
    s.set_defaults(run=cmd_check)

    s = sub.add_parser("demo", help="release, grade a sample class, export (make demo)")
    s.set_defaults(run=cmd_demo)

    s = sub.add_parser("lab", help="JupyterLab with nbgrader's extension on the course "
                       "(other options go to `jupyter lab`)")
    s.set_defaults(run=cmd_lab)

    s = sub.add_parser("hub", help="(root) the course on JupyterHub on this machine: Unix users, "
                                   "accounts, nbgrader's exchange (make hub)")
    s.add_argument("--root", default="/srv/attention-course", help="where the hub lives")
    s.add_argument("--port", type=int, default=8000, help="on 127.0.0.1 (default 8000)")
    s.add_argument("--instructor", default="instructor", help="the instructor's user name")
    s.add_argument("--students", default="alice,bob,carol",
                   help="the demo students' user names, comma-separated")
    s.add_argument("--setup-only", action="store_true", help="set up, do not start the hub")
    s.set_defaults(run=cmd_hub)
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args, extra = p.parse_known_args(argv)
    if extra and args.command != "lab":
        p.error(f"unrecognized arguments: {' '.join(extra)}")
    args.jupyter_args = extra
    install_log_escaping()  # log lines quote student ids, file names, errors
    try:
        return args.run(args)
    except (FileNotFoundError, ValueError, RuntimeError) as e:  # may quote a student's text
        print(f"error: {shown(e)}", file=sys.stderr)
        return 2


def run() -> None:
    """The program (`python -m grader`, `course-grader`): main(), then the process ends without
    tearing its interpreter down, which costs a command that imported torch (`check`, grading
    one submission) CPU at every run (`check` of one notebook: 0.15-0.31 s less, README).
    Every exit handler registered after this one (the sandbox stopped, temporary folders
    removed, multiprocessing's) still runs first: handlers run last-registered first.
    (In-process callers, the tests, call main().)"""
    import atexit
    import logging

    status = 1  # an exception escapes: Python prints it, then this handler ends the process

    def end() -> None:
        from grader.exits import exit_now

        logging.shutdown()  # registered before this handler (logging is imported by now)
        exit_now(status)

    atexit.register(end)
    try:
        status = main()
    except SystemExit as e:  # argparse's errors and --help
        status = e.code if isinstance(e.code, int) else int(e.code is not None)
        raise
    except KeyboardInterrupt:
        status = 130
        raise
    sys.exit(status)


if __name__ == "__main__":
    run()
