"""`python -m tests.mutants [--assignment A] [--sample N] [--seed S] [--workers W]` (`make
mutants`): mutants of every function students write, judged by the differential harness, graded
through autograde, and reported: a table per assignment, then every survivor, every equivalent
mutant that lost points and every wrong or unverified cause with its diff; the whole outcome as
JSON in build/mutants/ASSIGNMENT.json. Exit status 1 when a goal is missed (a survivor, an
equivalent mutant that lost points, a wrong cause, `grader check` and autograde at odds on
a mutant's visible tests, the unchanged solution short of full marks).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.course import REPO
from tests.mutants.run import ASSIGNMENTS, details, run, table, write_json


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutants", description=__doc__)
    parser.add_argument("--assignment", action="append", choices=ASSIGNMENTS,
                        help="only this assignment (repeat for several); default: all")
    parser.add_argument("--sample", type=int, help="grade N mutants per assignment, drawn at "
                        "random with --seed (default: all of them)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1,
                        help="notebooks executed at once (default 1: a shared machine)")
    parser.add_argument("--out", default=str(REPO / "build" / "mutants"))
    args = parser.parse_args(argv)
    if args.sample is not None and args.sample < 1:
        parser.error("--sample must be at least 1")
    reports = []
    for assignment in args.assignment or ASSIGNMENTS:
        print(f"{assignment}: generating, classifying and grading...", flush=True)
        report = run(assignment, args.sample, args.seed, args.workers)
        path = write_json(report, Path(args.out))
        print(f"{assignment}: done in {sum(report.seconds.values()):.0f} s; {path}", flush=True)
        reports.append(report)
    print("\n" + table(reports))
    for report in reports:
        if text := details(report):
            print(text)
    missed = sum(len(r.problems()) + (not r.control_full_marks) for r in reports)
    print(f"\n{missed} goal(s) missed" if missed else "\nevery goal met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
