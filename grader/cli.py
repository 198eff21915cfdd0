"""`python -m grader`: release, collect, autograde, feedback, report, export, roster, check,
demo, lab, hub."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import logging
import os
import sys
import time
from pathlib import Path

from grader.course import CELL_TIMEOUT, DEFAULT_COURSE, Course
from grader.shown import install_log_escaping, shown
from grader.startup import formats
from grader.startup.collector import paused

# Exit statuses, the same for every command (the parser's epilog and docs/troubleshooting.md
# say them to users): a script can tell "done" from "look at the rows" from "fix the command"
# from "run it again".
DONE = 0  # everything asked was done: every submission graded, every page delivered
INCOMPLETE = 1  # the command ran to its end, but not everything could be done (see its rows)
STOPPED = 2  # a usage or setup error, said on stderr; checked before any work is done
RETRY = 3  # (autograde) the grader's own failure left submissions ungraded: run it again

EXIT_STATUSES = f"""\
exit status:
  {DONE}  everything was done (autograde: every submission graded)
  {INCOMPLETE}  ran to its end, but not everything could be done: autograde: some
     submissions could not be graded (their ERROR rows: the student's problem);
     collect --from: a file of the archive was not taken in (its line says why);
     feedback: a page not delivered or published; check: a test fails or
     did not run, or a cell raised an error or was stopped; demo: a sample
     student's score is not the expected one
  {STOPPED}  stopped on an error, said on stderr as `error: ...`; a mistake in the
     command line (an option, an assignment's name, a folder) is reported
     before anything is released or graded
  {RETRY}  autograde: the grader itself failed on some submissions (not the
     students' fault): run the same command again to retry them
"""


def _course(args) -> Course:
    """The course named by --course/--exchange, else by $GRADER_COURSE/$GRADER_EXCHANGE (set in
    the instructor's server on the hub), else build/course (`make demo` and `make lab` both)."""
    root = args.course or os.environ.get("GRADER_COURSE")
    course = Course.at(Path(root).resolve()) if root else DEFAULT_COURSE
    exchange = getattr(args, "exchange", None) or os.environ.get("GRADER_EXCHANGE")
    if exchange:
        course = dataclasses.replace(course, shared_exchange=Path(exchange))
    if getattr(args, "db", None):
        course = dataclasses.replace(course, db=args.db)
    return course


def _known(course: Course, *names: str) -> None:
    """Raise ValueError before any work when a name is not an assignment of the course's
    source (a typo would otherwise be found only after a banner, a release or a pool)."""
    known = course.assignments()
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            raise ValueError(f"no assignment {name!r} in {course.source} (found: "
                             f"{', '.join(known) or 'none'})"
                             + (f"; did you mean {close[0]!r}?" if close else ""))


def _gradebook_named(course: Course) -> str:
    """Where the grades are, as the user may be shown it: a --db URL may hold a password."""
    return str(course.root / "gradebook.db") if course.db is None else \
        "the database given by --db"


def cmd_release(args) -> int:
    from grader.nbgrader.release import publish, release

    course = _course(args)
    _known(course, *args.assignments)
    for assignment in args.assignments or course.assignments():
        print(f"{assignment}: student version in {release(course, assignment, due=args.due)}")
        if args.late_penalty is not None:
            from grader.nbgrader.late import set_late_penalty

            print(f"{assignment}: {set_late_penalty(course, assignment, args.late_penalty)}")
        if args.publish:
            print(f"{assignment}: published to {publish(course, assignment)}, where "
                  "students fetch it")
    return DONE


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


def _late_penalty(text: str):
    """A late-penalty rule (grader.nbgrader.late.LatePolicy): '10%/day,max=50%', 'zero', 'none'."""
    from grader.nbgrader.late import LatePolicy

    try:
        return LatePolicy.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def cmd_collect(args) -> int:
    course = _course(args)
    _known(course, args.assignment)
    if args.archive or args.lms or args.roster:
        return _collect_archive(args, course)
    from grader.nbgrader.collect import collect, record_path

    record = collect(course, args.assignment)
    for student, taken in sorted(record["students"].items()):
        line = taken.get("error") or f"submitted {taken['time']} ({taken['folder']})"
        flags = f"  [{len(taken['flags'])} file(s) left out]" if taken.get("flags") else ""
        print(f"  {shown(student):<12} {shown(line)}{flags}")
    for refused in record["refused"]:
        print(f"  REFUSED {shown(refused['folder'])}: it {shown(refused['why'])}")
    taken = sum("error" not in t for t in record["students"].values())
    print(f"{taken} submission(s) collected, {len(record['students']) - taken} could not be; "
          f"{len(record['refused'])} refused.")
    print(f"Collected into {course.submitted}/STUDENT/{args.assignment}/ (the record: "
          f"{record_path(course, args.assignment)}); next: python -m grader autograde "
          f"{args.assignment}")
    return DONE


def _collect_archive(args, course: Course) -> int:
    """collect --from: the archive of Canvas's or Moodle's submissions (collect_archive.py)."""
    from grader.nbgrader.collect_archive import LMSES, collect_archive, summary

    if not (args.archive and args.lms):
        raise ValueError("--lms and --roster go with --from ARCHIVE, and --from needs --lms "
                         "canvas or --lms moodle (the LMS the archive was downloaded from)")
    rules = LMSES[args.lms]
    if not args.roster:
        raise ValueError(f"--from needs --roster: the names in {rules.LMS}'s archive carry "
                         f"{rules.LMS}'s {rules.NUMBER}, not the student's login; download "
                         f"{rules.ROSTER}, and give it as --roster")
    for path in (args.archive, args.roster):
        if not Path(path).is_file():
            raise FileNotFoundError(f"no file {path}")
    done = collect_archive(course, args.assignment, Path(args.archive), args.lms,
                           Path(args.roster))
    print(f"Took in {shown(args.assignment)} from {rules.LMS}'s archive "
          f"{shown(args.archive)}, the students of {shown(args.roster)}:")
    for line in summary(done):
        print(line)
    print(f"Taken into {course.submitted}/STUDENT/{args.assignment}/ (the record: "
          f"{done.record}); next: python -m grader autograde {args.assignment}")
    if not done.complete:
        print("Not everything in the archive was taken in: see the lines above (exit status 1)",
              file=sys.stderr)
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


def cmd_autograde(args) -> int:
    course = _course(args)
    _known(course, args.assignment)
    submissions = Path(args.submissions) if args.submissions else None
    if submissions is not None and not submissions.is_dir():
        raise FileNotFoundError(f"submissions folder {submissions} does not exist")
    if _a_class(args):
        from grader.pipeline.pools import preload_for, start_fork_server

        # importing torch there while this process imports nbgrader
        start_fork_server(preload_for(course.source / args.assignment))
    with paused():  # nbgrader's imports (grader.startup.collector)
        from grader.intake import find_submissions
        from grader.pipeline.autograde import autograde, collected_submissions

    from grader.sandbox.session import Limits

    limits = Limits().updated({k: v for k, v in (("cell_timeout", args.cell_timeout),
                                                 ("notebook_timeout", args.notebook_timeout),
                                                 ("memory_bytes", args.memory))
                               if v is not None})
    from grader.sandbox.namespaces import IsolationUnavailable
    from grader.sandbox.session import confinement

    # Everything that can stop the run is found before the banner: an empty folder, nothing
    # collected, no sandbox.
    if submissions is not None:
        find_submissions(submissions, args.assignment)
    else:
        from grader.nbgrader.collect import load_record

        collected_submissions(course, args.assignment,
                              load_record(course, args.assignment)["students"])
    from grader.nbgrader.late import load_policy

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
    results = autograde(course, args.assignment, submissions, limits=limits,
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
    from grader.record import status_path

    print(f"Grades in the gradebook ({_gradebook_named(course)}); graded notebooks in "
          f"{course.autograded}/STUDENT/{args.assignment}/; every row and flag in "
          f"{status_path(course.root, args.assignment)}")
    if infra:
        print(f"{len(infra)} submission(s) not graded by a failure of the grader: run the same "
              "command again to retry them (exit status 3)", file=sys.stderr)
        return RETRY
    if errors:
        print(f"{len(errors)} submission(s) could not be graded: see their ERROR rows above "
              "(exit status 1)", file=sys.stderr)
        return INCOMPLETE
    return DONE


def _positive(kind):
    """An argparse type: a number of `kind` above zero."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be more than 0")
        return value
    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


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


def cmd_feedback(args) -> int:
    course = _course(args)
    _known(course, args.assignment)
    from grader.outputs.feedback import feedback

    to = Path(args.to).resolve() if args.to else None
    pages = feedback(course, args.assignment, to=to)
    for student, result in pages.items():
        where = result if isinstance(result, str) else ", ".join(str(p) for p in result)
        print(f"  {shown(student):<12} {shown(where)}")
    failed = any(isinstance(r, str) for r in pages.values())
    print(f"Feedback pages for {sum(not isinstance(r, str) for r in pages.values())} of "
          f"{len(pages)} student(s) in {course.feedback}/STUDENT/{args.assignment}/"
          + (f"; copies in {to}" if to else ""))
    if args.publish:
        from grader.outputs.feedback import publish_feedback

        published, ungraded = publish_feedback(course, args.assignment)
        for student, why in published.items():
            print(f"  {shown(student):<12} "
                  f"{'published' if why is None else 'NOT published: ' + shown(why)}")
            failed = failed or why is not None
        print(f"feedback in the exchange ({course.exchange}): each student fetches their own "
              "from the assignment list")
        if ungraded:
            print(f"warning: written answers not graded yet, shown as 'not graded yet' in "
                  f"{len(ungraded)} student(s)' feedback (grade them in the formgrader, then "
                  "run `feedback --publish` again):")
            for student, cells in ungraded.items():
                print(f"  {shown(student):<12} {shown(', '.join(cells))}")
    return INCOMPLETE if failed else DONE


def _graded_before(course: Course, assignment: str) -> None:
    """Raise FileNotFoundError unless `assignment` was autograded in `course` (every run
    writes its status file): before the gradebook is opened, which would create an empty one."""
    from grader.record import status_path

    if not course.has_gradebook or not status_path(course.root, assignment).exists():
        raise FileNotFoundError(f"nothing of {assignment} was autograded in {course.root}: run "
                                f"`python -m grader autograde {assignment}` first")


def cmd_report(args) -> int:
    course = _course(args)
    _known(course, args.assignment)
    _graded_before(course, args.assignment)
    from grader.outputs.report import report

    to = Path(args.to) if args.to else course.root / "reports" / f"{args.assignment}.html"
    feedback_dir = Path(args.feedback) if args.feedback else None
    written = report(course, args.assignment, to, feedback_dir)
    print(f"class report written to {shown(written.resolve())}")
    return DONE


EXPORT_NAMES = {"nbgrader": "grades.csv", "canvas": "grades-canvas.csv",
                "moodle": "grades-moodle.csv"}


def cmd_export(args) -> int:
    from grader.outputs.export import export

    course = _course(args)
    roster = Path(args.roster) if args.roster else None
    if roster is not None and not roster.is_file():
        raise FileNotFoundError(f"no roster file {roster}")
    to = Path(args.to) if args.to else course.root / "exports" / EXPORT_NAMES[args.format]
    to = export(course, to, args.format, roster)
    print(f"grades written to {shown(to.resolve())} ({args.format} format)")
    return DONE


def cmd_roster(args) -> int:
    from grader.nbgrader.roster import described, import_roster

    course = _course(args)
    outcome = import_roster(course, Path(args.roster), args.format)
    for what, entries in (("added", outcome.added), ("updated", outcome.updated)):
        for entry in entries:
            print(f"  {shown(entry.id):<12} {what}: {shown(described(entry.fields)) or '-'}")
    for row, why in outcome.rejected:
        print(f"  row {row}: REJECTED: {shown(why)}")
    if outcome.not_on_roster:
        print(f"warning: {len(outcome.not_on_roster)} student(s) in the gradebook are not on "
              f"this roster (left as they are): {shown(', '.join(outcome.not_on_roster))}")
    print(f"Roster {shown(args.roster)} ({outcome.format} format): {len(outcome.added)} added, "
          f"{len(outcome.updated)} updated, {len(outcome.unchanged)} unchanged, "
          f"{len(outcome.rejected)} rejected.")
    print(f"Students in the gradebook ({_gradebook_named(course)}); next: python -m grader "
          "export")
    if outcome.rejected:
        print(f"{len(outcome.rejected)} row(s) rejected: see their REJECTED lines above "
              "(exit status 1)", file=sys.stderr)
        return INCOMPLETE
    return DONE


def cmd_check(args) -> int:
    from grader.selfcheck.run import report, run_visible_tests

    run = run_visible_tests(Path(args.notebook), timeout=args.timeout)
    print(report(run, Path(args.notebook)))
    return DONE if run.ok else INCOMPLETE


def cmd_demo(args) -> int:
    from grader.demo.run import meets_expectation, next_steps, run_demo

    course = _course(args)
    rows = run_demo(course=course)
    expected = all(meets_expectation(s, r) for table in rows.values() for s, r in table)
    print("\nEvery sample student got the score their story predicts." if expected else
          "\nSome sample students did not get the expected score (marked NO above).")
    print("\n".join(next_steps(course, rows)))
    return DONE if expected else INCOMPLETE


def cmd_lab(args) -> int:
    from grader.servers.lab import lab

    return lab(_course(args), args.jupyter_args)


def cmd_hub(args) -> int:
    from grader.hub import command, install
    from grader.hub.layout import Hub

    hub = Hub(root=Path(args.root), instructor=args.instructor,
              students=tuple(s for s in args.students.split(",") if s), port=args.port)
    if args.remove:
        from grader.hub.remove import remove

        for line in remove(hub) or [f"nothing of a hub in {hub.root} was left"]:
            print(line)
        return DONE
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


COURSE_OPTIONS = (
    ("--course", "nbgrader course directory (default: $GRADER_COURSE, else build/course, the "
                 "one `make demo` grades into and `make lab` opens)"),
    ("--db", "gradebook database URL, e.g. postgresql://user@host/grades (default: sqlite, "
             "gradebook.db in the course directory)"),
    ("--exchange", "nbgrader exchange shared with the students (on a hub; default: "
                   "$GRADER_EXCHANGE, else exchange/ in the course directory)"),
)


def _course_options(p: argparse.ArgumentParser, default=None) -> None:
    """--course, --db and --exchange, accepted before the command (default None) and after it
    (default SUPPRESS: given there, they replace what was given before; not given, they leave
    it alone)."""
    for flag, text in COURSE_OPTIONS:
        p.add_argument(flag, default=default, help=text)


def _log_options(p: argparse.ArgumentParser, default=None) -> None:
    """-v and --quiet, before the command or after it (as the course's options)."""
    group = p.add_mutually_exclusive_group()
    group.add_argument("-v", "--verbose", action="store_const", const="verbose", dest="talk",
                       default=default, help="also show the grader's diagnostics (its log at "
                                             "DEBUG level) (default: progress lines and warnings)")
    group.add_argument("-q", "--quiet", action="store_const", const="quiet", dest="talk",
                       default=default, help="no progress lines, only warnings, errors and the "
                                             "command's result (default: progress lines too)")


def _command(sub, name: str, text: str, course: bool = True, **kwargs) -> argparse.ArgumentParser:
    s = sub.add_parser(name, help=text, **kwargs)
    if course:
        _course_options(s, default=argparse.SUPPRESS)
    _log_options(s, default=argparse.SUPPRESS)
    return s


class _Stream(logging.StreamHandler):
    """A handler writing to sys.stdout or sys.stderr as they are when it writes (a caller may
    replace them, as the tests do, after the command configured its logging)."""

    def __init__(self, name: str):
        super().__init__()
        self.name_of_stream = name

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = getattr(sys, self.name_of_stream)
        super().emit(record)


class _Below(logging.Filter):
    """Records under a level (the progress lines, on stdout; the rest go to stderr)."""

    def __init__(self, level: int):
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < self.level


def configure_logging(talk: str | None) -> None:
    """The grader's loggers for a command: progress lines (the pipeline's INFO records) on
    stdout, warnings and errors on stderr; `verbose` adds every module's diagnostics (DEBUG),
    `quiet` leaves warnings and errors alone. Called again (the tests run commands in one
    process), it replaces its own handlers rather than adding more."""
    root = logging.getLogger("grader")
    for handler in [h for h in root.handlers if getattr(h, "grader_cli", False)]:
        root.removeHandler(handler)
    out, err = _Stream("stdout"), _Stream("stderr")
    out.addFilter(_Below(logging.WARNING))
    err.setLevel(logging.WARNING)
    for handler in (out, err):
        handler.grader_cli = True
        handler.setFormatter(logging.Formatter("%(message)s"))
        root.addHandler(handler)
    root.setLevel({"verbose": logging.DEBUG}.get(talk, logging.WARNING))
    progress = logging.getLogger("grader.pipeline")
    progress.setLevel({"verbose": logging.NOTSET, "quiet": logging.WARNING}.get(talk,
                                                                                 logging.INFO))


def parser() -> argparse.ArgumentParser:
    """The command line. Every option that takes a value says its default in its help (a test
    checks it), and the course's options work before or after the command."""
    p = argparse.ArgumentParser(prog="python -m grader", description=__doc__,
                                epilog=EXIT_STATUSES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    _course_options(p)
    _log_options(p)
    sub = p.add_subparsers(dest="command", required=True)

    s = _command(sub, "release", "make student versions of assignments")
    s.add_argument("assignments", nargs="*", help="assignment names (default: every assignment "
                                                  "of the course's source)")
    s.add_argument("--due", type=_due, help="due date, e.g. '2026-12-01 17:00' (UTC unless a "
                                            "zone is given); later submissions are marked late "
                                            "(default: none)")
    s.add_argument("--late-penalty", type=_late_penalty, metavar="RULE",
                   help="points taken from late submissions at every autograde of it, a "
                        "percentage per started day or hour late: '10%%/day', "
                        "'10%%/day,max=50%%', '2%%/hour', 'zero' (a late submission scores 0), "
                        "'none' (remove the rule) (default: the rule set before, else none)")
    s.add_argument("--publish", action="store_true",
                   help="also put it in the exchange, where students fetch it")
    s.set_defaults(run=cmd_release)

    s = _command(sub, "collect", "take the latest submissions in from the exchange, or from "
                                 "the archive Canvas or Moodle downloads",
                 epilog=EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("assignment")
    s.add_argument("--from", dest="archive", metavar="ARCHIVE",
                   help="the .zip of the assignment's submissions downloaded from the LMS "
                        "(Canvas: Download Submissions; Moodle: Download all submissions) "
                        "(default: none, nbgrader's exchange)")
    s.add_argument("--lms", choices=("canvas", "moodle"),
                   help="the LMS the archive comes from (default: none; needed with --from)")
    s.add_argument("--roster", help="with --from, who each file's LMS number is: Canvas: the "
                                    "gradebook export; Moodle: the assignment's grading "
                                    "worksheet (default: none; needed with --from)")
    s.set_defaults(run=cmd_collect)

    s = _command(sub, "autograde", "grade submitted notebooks", epilog=EXIT_STATUSES,
                 formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("assignment")
    s.add_argument("--submissions",
                   help="folder laid out as STUDENT/ASSIGNMENT/NOTEBOOK.ipynb (default: what "
                        "`collect` took in, from the exchange or an LMS's archive)")
    s.add_argument("--cell-timeout", type=_positive(float),
                   help="seconds of CPU time allowed per cell (and per call from a test); a "
                        "cell that waits or sleeps is stopped at 3 times that in wall-clock "
                        f"time (default: {CELL_TIMEOUT}; limits in the assignment's own "
                        "metadata win over these options)")
    s.add_argument("--notebook-timeout", type=_positive(float),
                   help="seconds a whole notebook may run (default: 900)")
    s.add_argument("--memory", type=_bytes, help="memory per submission, e.g. 4G (default: 6G)")
    s.add_argument("--workers", type=_positive(int),
                   help="notebooks executed at once on this machine (default: one per core)")
    s.add_argument("--scheduler", help="tcp://HOST:PORT of a Dask scheduler: execute the "
                                       "notebooks on that cluster instead (default: none, "
                                       "this machine)")
    s.add_argument("--force", action="store_true",
                   help="grade again submissions that are unchanged since the last run")
    s.add_argument("--unconfined", action="store_true",
                   help="grade even where the sandbox (bubblewrap) cannot be built; every "
                        "submission is then flagged 'unconfined'. Never for untrusted code")
    s.set_defaults(run=cmd_autograde)

    s = _command(sub, "feedback", "feedback HTML for autograded students")
    s.add_argument("assignment")
    s.add_argument("--to", help="also copy the pages here as STUDENT.html (default: none; the "
                                "pages stay in the course's feedback/STUDENT/ASSIGNMENT/)")
    s.add_argument("--publish", action="store_true",
                   help="also put them in the exchange, where each student fetches their own")
    s.set_defaults(run=cmd_feedback)

    s = _command(sub, "report", "(instructors) one HTML page on how the class did")
    s.add_argument("assignment")
    s.add_argument("--to", help="the page to write (default: reports/ASSIGNMENT.html in the "
                                "course directory)")
    s.add_argument("--feedback", help="folder of STUDENT.html feedback pages to link to "
                                      "(default: none, no links)")
    s.set_defaults(run=cmd_report)

    s = _command(sub, "export", "grades as CSV: nbgrader's format, or for Canvas or Moodle")
    s.add_argument("--format", choices=tuple(EXPORT_NAMES), default="nbgrader",
                   help="nbgrader: one row per student and assignment; canvas: for Canvas's "
                        "Grades > Import; moodle: for Moodle's Import > CSV file (default: "
                        "%(default)s)")
    s.add_argument("--to", help="the CSV file to write (default: exports/grades.csv in the "
                                "course directory; grades-canvas.csv, grades-moodle.csv for "
                                "those formats)")
    s.add_argument("--roster", help="(canvas) a gradebook CSV exported from Canvas: students "
                                    "are matched on SIS Login ID, SIS User ID or ID (default: "
                                    "none)")
    s.set_defaults(run=cmd_export)

    s = _command(sub, "roster", "students' names and emails into the gradebook, from a "
                                "roster CSV (nbgrader's, or exported from Canvas or Moodle)")
    s.add_argument("roster", help="the CSV file: nbgrader's (id,first_name,last_name,email), "
                                  "Canvas's gradebook export, or Moodle's with Username")
    s.add_argument("--format", choices=("auto", "nbgrader", "canvas", "moodle"),
                   default="auto", help="which roster it is (default: %(default)s, told by "
                                        "its columns)")
    s.set_defaults(run=cmd_roster)

    s = _command(sub, "check", "(students) run a notebook's visible tests", course=False)
    s.add_argument("notebook")
    s.add_argument("--timeout", type=_positive(int), default=CELL_TIMEOUT,
                   help="seconds one cell may run before it is stopped (default: %(default)s)")
    s.set_defaults(run=cmd_check)

    s = _command(sub, "demo", "release, grade a sample class, export (make demo)")
    s.set_defaults(run=cmd_demo)

    s = _command(sub, "lab", "JupyterLab with nbgrader's extension on the course "
                 "(other options go to `jupyter lab`)")
    s.set_defaults(run=cmd_lab)

    s = _command(sub, "hub", "(root) the course on JupyterHub on this machine: Unix users, "
                             "accounts, nbgrader's exchange (make hub)", course=False)
    s.add_argument("--root", default="/srv/attention-course",
                   help="where the hub lives (default: %(default)s)")
    s.add_argument("--port", type=int, default=8000,
                   help="on 127.0.0.1 (default: %(default)s)")
    s.add_argument("--instructor", default="instructor",
                   help="the instructor's user name (default: %(default)s)")
    s.add_argument("--students", default="alice,bob,carol",
                   help="the demo students' user names, comma-separated (default: %(default)s)")
    s.add_argument("--setup-only", action="store_true", help="set up, do not start the hub")
    s.add_argument("--remove", action="store_true",
                   help="undo everything `make hub` did for the hub in --root: stop it, remove "
                        "its users, groups, ACL entry, exchange and folder (make hub-remove)")
    s.set_defaults(run=cmd_hub)
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args, extra = p.parse_known_args(argv)
    if extra and args.command != "lab":
        p.error(f"unrecognized arguments: {' '.join(extra)}")
    args.jupyter_args = extra
    if args.command not in ("lab", "hub"):  # those run Jupyter's servers, which keep them
        formats.leave_out()  # jsonschema's optional format packages (grader/startup/formats.py)
    install_log_escaping()  # log lines quote student ids, file names, errors
    configure_logging(args.talk)
    try:
        return args.run(args)
    except (FileNotFoundError, ValueError, RuntimeError) as e:  # may quote a student's text
        print(f"error: {shown(e)}", file=sys.stderr)
        return STOPPED


def run() -> None:
    """The program (`python -m grader`, `course-grader`): main(), then the process ends without
    tearing its interpreter down, which costs a command that imported torch (`check`, grading
    one submission) CPU at every run (grader/startup/exits.py).
    Every exit handler registered after this one (the sandbox stopped, temporary folders
    removed, multiprocessing's) still runs first: handlers run last-registered first.
    (In-process callers, the tests, call main().)"""
    import atexit
    import logging

    status = 1  # an exception escapes: Python prints it, then this handler ends the process

    def end() -> None:
        from grader.startup.exits import exit_now

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
