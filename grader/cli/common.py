"""What every command of `python -m grader` shares: its exit statuses, the course it works on
(--course, --db, --exchange), the log options (-v, --quiet), and adding a command's parser with
them."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import os
import sys
from pathlib import Path

from grader.course import DEFAULT_COURSE, Course
from grader.shown import shown

# Exit statuses, the same for every command (the parser's epilog and docs/troubleshooting.md
# say them to users): a script can tell "done" from "look at the rows" from "fix the command"
# from "run it again".
DONE = 0  # everything asked was done: every submission graded, every page delivered
INCOMPLETE = 1  # the command ran to its end, but not everything could be done (see its rows)
STOPPED = 2  # a usage or setup error, said on stderr; checked before any work is done
RETRY = 3  # (autograde) the grader's own failure left submissions ungraded: run it again
HELD = 4  # (autograde) a fault of the grading machine or the tests, not charged to students

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
  {HELD}  autograde: held for the instructor: the instructor's own solution
     does not earn full marks on this machine (nothing was graded), or one
     test failed with the same error for every student graded (recorded, but
     feedback and export refuse the assignment until it is looked at)
"""


def course_of(args) -> Course:
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


def known(course: Course, *names: str) -> None:
    """Raise ValueError before any work when a name is not an assignment of the course's
    source (a typo would otherwise be found only after a banner, a release or a pool)."""
    assignments = course.assignments()
    for name in names:
        if name not in assignments:
            close = difflib.get_close_matches(name, assignments, n=1)
            raise ValueError(f"no assignment {name!r} in {course.source} (found: "
                             f"{', '.join(assignments) or 'none'})"
                             + (f"; did you mean {close[0]!r}?" if close else ""))


def gradebook_named(course: Course) -> str:
    """Where the grades are, as the user may be shown it: a --db URL may hold a password."""
    return str(course.root / "gradebook.db") if course.db is None else \
        "the database given by --db"


def positive(kind):
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


COURSE_OPTIONS = (
    ("--course", "nbgrader course directory (default: $GRADER_COURSE, else build/course, the "
                 "one `make demo` grades into and `make lab` opens)"),
    ("--db", "gradebook database URL, e.g. postgresql://user@host/grades (default: sqlite, "
             "gradebook.db in the course directory)"),
    ("--exchange", "nbgrader exchange shared with the students (on a hub; default: "
                   "$GRADER_EXCHANGE, else exchange/ in the course directory)"),
)


def course_options(p: argparse.ArgumentParser, default=None) -> None:
    """--course, --db and --exchange, accepted before the command (default None) and after it
    (default SUPPRESS: given there, they replace what was given before; not given, they leave
    it alone)."""
    for flag, text in COURSE_OPTIONS:
        p.add_argument(flag, default=default, help=text)


def log_options(p: argparse.ArgumentParser, default=None) -> None:
    """-v and --quiet, before the command or after it (as the course's options)."""
    group = p.add_mutually_exclusive_group()
    group.add_argument("-v", "--verbose", action="store_const", const="verbose", dest="talk",
                       default=default, help="also show the grader's diagnostics (its log at "
                                             "DEBUG level) (default: progress lines and warnings)")
    group.add_argument("-q", "--quiet", action="store_const", const="quiet", dest="talk",
                       default=default, help="no progress lines, only warnings, errors and the "
                                             "command's result (default: progress lines too)")


def add_command(sub, name: str, text: str, course: bool = True,
                **kwargs) -> argparse.ArgumentParser:
    """The parser of command `name` (`text`: its one-line help), with the log options and,
    where it works on a course (`course`), the course's options."""
    s = sub.add_parser(name, help=text, **kwargs)
    if course:
        course_options(s, default=argparse.SUPPRESS)
    log_options(s, default=argparse.SUPPRESS)
    return s


def print_error(e: BaseException) -> None:
    """`error: ...` on stderr: the exception's lines (`e.lines`, a message of several lines) or
    its text, each line escaped (grader.shown: errors quote student text)."""
    lines = getattr(e, "lines", None) or [str(e)]
    print("error: " + "\n".join(shown(line) for line in lines), file=sys.stderr)


def add_accept_held(s) -> None:
    """--accept-held, for the commands a held assignment stops (grader.pipeline.held)."""
    s.add_argument("--accept-held", action="store_true",
                   help="go on although autograde held an assignment (one test failed with the "
                        "same error for every student): the students really made that mistake")


def not_held(course: Course, assignments, accept: bool) -> None:
    """Raise RuntimeError (exit status 2, before anything is written) when one of `assignments`
    is held by its last autograde run, unless `accept`."""
    from grader.pipeline.grades import load_run
    from grader.pipeline.held import describe

    for assignment in assignments:
        held = load_run(course.root, assignment).get("held")
        if held and not accept:
            e = RuntimeError(f"{assignment} is held")
            e.lines = describe(assignment, held)  # (each line shown escaped: they quote errors)
            raise e
