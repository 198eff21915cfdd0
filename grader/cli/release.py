"""`python -m grader release`: the students' versions of assignments, their due date and late
penalty, published to the exchange on request (grader.nbgrader.release, grader.nbgrader.late)."""

from __future__ import annotations

import argparse

from grader.cli.common import DONE, add_command, course_of, known


def add_parser(sub) -> argparse.ArgumentParser:
    s = add_command(sub, "release", "make student versions of assignments")
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
    return s


def run(args) -> int:
    from grader.nbgrader.release import publish, release

    course = course_of(args)
    known(course, *args.assignments)
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
