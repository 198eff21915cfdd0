"""`python -m grader report`: one HTML page on how the class did (grader.outputs.report)."""

from __future__ import annotations

import argparse
from pathlib import Path

from grader.cli.common import DONE, add_command, course_of, known
from grader.course import Course
from grader.shown import shown


def add_parser(sub) -> argparse.ArgumentParser:
    s = add_command(sub, "report", "(instructors) one HTML page on how the class did")
    s.add_argument("assignment")
    s.add_argument("--to", help="the page to write (default: reports/ASSIGNMENT.html in the "
                                "course directory)")
    s.add_argument("--feedback", help="folder of STUDENT.html feedback pages to link to "
                                      "(default: none, no links)")
    return s


def run(args) -> int:
    course = course_of(args)
    known(course, args.assignment)
    _graded_before(course, args.assignment)
    from grader.outputs.report import report

    to = Path(args.to) if args.to else course.root / "reports" / f"{args.assignment}.html"
    feedback_dir = Path(args.feedback) if args.feedback else None
    written = report(course, args.assignment, to, feedback_dir)
    print(f"class report written to {shown(written.resolve())}")
    return DONE


def _graded_before(course: Course, assignment: str) -> None:
    """Raise FileNotFoundError unless `assignment` was autograded in `course` (every run
    writes its status file): before the gradebook is opened, which would create an empty one."""
    from grader.pipeline.grades import status_path

    if not course.has_gradebook or not status_path(course.root, assignment).exists():
        raise FileNotFoundError(f"nothing of {assignment} was autograded in {course.root}: run "
                                f"`python -m grader autograde {assignment}` first")
