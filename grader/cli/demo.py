"""`python -m grader demo` (`make demo`): release, grade a sample class, export
(grader.demo.run)."""

from __future__ import annotations

import argparse

from grader.cli.common import DONE, HELD, INCOMPLETE, add_command, course_of, print_error

DESCRIPTION = """\
Release every assignment, grade a sample class on each into the course (--course), and
export. The demo's own files (the sample submissions, feedback pages, class reports,
grades.csv) go to build/demo/ for the default course, build/course, and to DIR/demo/ for
--course DIR, so that a demo on a course of your own leaves build/ alone."""


def add_parser(sub) -> argparse.ArgumentParser:
    s = add_command(sub, "demo", "release, grade a sample class, export (make demo)",
                    description=DESCRIPTION)
    s.add_argument("--unconfined", action="store_true",
                   help="grade the sample classes even where the sandbox (bubblewrap) cannot be "
                        "built; every submission is then flagged 'unconfined'")
    return s


def run(args) -> int:
    from grader.demo.run import meets_expectation, next_steps, run_demo
    from grader.pipeline.preflight import PreflightFailed

    course = course_of(args)
    try:
        rows = run_demo(course=course, unconfined=args.unconfined)
    except PreflightFailed as e:  # this machine lacks what an assignment needs: no one graded
        print_error(e)
        return HELD
    expected = all(meets_expectation(s, r) for table in rows.values() for s, r in table)
    print("\nEvery sample student got the score their story predicts." if expected else
          "\nSome sample students did not get the expected score (marked NO above).")
    print("\n".join(next_steps(course, rows)))
    return DONE if expected else INCOMPLETE
