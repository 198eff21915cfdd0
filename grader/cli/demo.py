"""`python -m grader demo` (`make demo`): release, grade a sample class, export
(grader.demo.run)."""

from __future__ import annotations

import argparse

from grader.cli.common import DONE, INCOMPLETE, add_command, course_of


def add_parser(sub) -> argparse.ArgumentParser:
    return add_command(sub, "demo", "release, grade a sample class, export (make demo)")


def run(args) -> int:
    from grader.demo.run import meets_expectation, next_steps, run_demo

    course = course_of(args)
    rows = run_demo(course=course)
    expected = all(meets_expectation(s, r) for table in rows.values() for s, r in table)
    print("\nEvery sample student got the score their story predicts." if expected else
          "\nSome sample students did not get the expected score (marked NO above).")
    print("\n".join(next_steps(course, rows)))
    return DONE if expected else INCOMPLETE
