"""`python -m grader check`: a student's own run of a notebook's visible tests
(grader.selfcheck)."""

from __future__ import annotations

import argparse
from pathlib import Path

from grader.cli.common import DONE, INCOMPLETE, add_command, positive
from grader.course import CELL_TIMEOUT


def add_parser(sub) -> argparse.ArgumentParser:
    s = add_command(sub, "check", "(students) run a notebook's visible tests", course=False)
    s.add_argument("notebook")
    s.add_argument("--timeout", type=positive(int), default=CELL_TIMEOUT,
                   help="seconds one cell may run before it is stopped (default: %(default)s)")
    return s


def run(args) -> int:
    from grader.selfcheck.run import report, run_visible_tests

    result = run_visible_tests(Path(args.notebook), timeout=args.timeout)
    print(report(result, Path(args.notebook)))
    return DONE if result.ok else INCOMPLETE
