"""`python -m grader roster`: the students' names and emails into the gradebook, from a roster
CSV (grader.nbgrader.roster)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.cli.common import DONE, INCOMPLETE, add_command, course_of, gradebook_named
from grader.shown import shown


def add_parser(sub) -> argparse.ArgumentParser:
    s = add_command(sub, "roster", "students' names and emails into the gradebook, from a "
                                   "roster CSV (nbgrader's, or exported from Canvas or Moodle)")
    s.add_argument("roster", help="the CSV file: nbgrader's (id,first_name,last_name,email), "
                                  "Canvas's gradebook export, or Moodle's with Username")
    s.add_argument("--format", choices=("auto", "nbgrader", "canvas", "moodle"),
                   default="auto", help="which roster it is (default: %(default)s, told by "
                                        "its columns)")
    return s


def run(args) -> int:
    from grader.nbgrader.roster import described, import_roster

    course = course_of(args)
    outcome = import_roster(course, Path(args.roster), args.format)
    for what, entries in (("added", outcome.added), ("updated", outcome.updated)):
        for entry in entries:
            print(f"  {shown(entry.id):<12} {what}: {shown(described(entry.fields)) or '-'}")
    for row, why in outcome.rejected:
        print(f"  row {row}: REJECTED: {shown(why)}")
    if outcome.not_on_roster:
        print(f"warning: {len(outcome.not_on_roster)} student(s) in the gradebook are not on "
              f"this roster (left as they are): {shown(', '.join(outcome.not_on_roster))}")
    print(f"Roster {shown(args.roster)} ({outcome.format} format): {len(outcome.added)} added, "
          f"{len(outcome.updated)} updated, {len(outcome.unchanged)} unchanged, "
          f"{len(outcome.rejected)} rejected.")
    print(f"Students in the gradebook ({gradebook_named(course)}); next: python -m grader "
          "export")
    if outcome.rejected:
        print(f"{len(outcome.rejected)} row(s) rejected: see their REJECTED lines above "
              "(exit status 1)", file=sys.stderr)
        return INCOMPLETE
    return DONE
