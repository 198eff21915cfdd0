"""`python -m grader`: release, collect, autograde, feedback, report, export, roster, check,
demo, lab, hub."""

# (This docstring is the parser's description.) One module per command, each with its parser
# (`add_parser`) and its work (`run`: parse, call the library, print); what they share is
# grader/cli/common.py, the logging grader/cli/logs.py. Here: the parser, and the program.

from __future__ import annotations

import argparse
import sys

from grader.cli import (
    autograde,
    check,
    collect,
    demo,
    export,
    feedback,
    hub,
    lab,
    release,
    report,
    roster,
)
from grader.cli.common import EXIT_STATUSES, STOPPED, course_options, log_options, print_error
from grader.cli.logs import configure_logging
from grader.shown import install_log_escaping
from grader.startup import formats

# The commands, in the order `--help` lists them.
COMMANDS = (release, collect, autograde, feedback, report, export, roster, check, demo, lab, hub)


def parser() -> argparse.ArgumentParser:
    """The command line. Every option that takes a value says its default in its help (a test
    checks it), and the course's options work before or after the command."""
    p = argparse.ArgumentParser(prog="python -m grader", description=__doc__,
                                epilog=EXIT_STATUSES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    course_options(p)
    log_options(p)
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub).set_defaults(run=command.run)
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
        print_error(e)
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
