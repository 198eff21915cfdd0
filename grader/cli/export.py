"""`python -m grader export`: the grades as CSV, nbgrader's or for Canvas or Moodle
(grader.outputs.export)."""

from __future__ import annotations

import argparse
from pathlib import Path

from grader.cli.common import DONE, add_accept_held, add_command, course_of, not_held
from grader.shown import shown

EXPORT_NAMES = {"nbgrader": "grades.csv", "canvas": "grades-canvas.csv",
                "moodle": "grades-moodle.csv"}


def add_parser(sub) -> argparse.ArgumentParser:
    s = add_command(sub, "export", "grades as CSV: nbgrader's format, or for Canvas or Moodle")
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
    add_accept_held(s)
    return s


def run(args) -> int:
    from grader.outputs.export import export

    course = course_of(args)
    roster = Path(args.roster) if args.roster else None
    if roster is not None and not roster.is_file():
        raise FileNotFoundError(f"no roster file {roster}")
    not_held(course, course.assignments(), args.accept_held)
    to = Path(args.to) if args.to else course.root / "exports" / EXPORT_NAMES[args.format]
    to = export(course, to, args.format, roster)
    print(f"grades written to {shown(to.resolve())} ({args.format} format)")
    return DONE
