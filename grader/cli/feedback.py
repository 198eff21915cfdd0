"""`python -m grader feedback`: each autograded student's feedback page, published to the
exchange on request (grader.outputs.feedback)."""

from __future__ import annotations

import argparse
from pathlib import Path

from grader.cli.common import (
    DONE,
    INCOMPLETE,
    add_accept_held,
    add_command,
    course_of,
    known,
    not_held,
)
from grader.shown import shown


def add_parser(sub) -> argparse.ArgumentParser:
    s = add_command(sub, "feedback", "feedback HTML for autograded students")
    s.add_argument("assignment")
    s.add_argument("--to", help="also copy the pages here as STUDENT.html (default: none; the "
                                "pages stay in the course's feedback/STUDENT/ASSIGNMENT/)")
    s.add_argument("--publish", action="store_true",
                   help="also put them in the exchange, where each student fetches their own")
    add_accept_held(s)
    return s


def run(args) -> int:
    course = course_of(args)
    known(course, args.assignment)
    not_held(course, [args.assignment], args.accept_held)
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
        failed = _publish(course, args.assignment) or failed
    return INCOMPLETE if failed else DONE


def _publish(course, assignment: str) -> bool:
    """feedback --publish: the pages into the exchange; whether one could not be published."""
    from grader.outputs.feedback import publish_feedback

    failed = False
    published, ungraded = publish_feedback(course, assignment)
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
    return failed
