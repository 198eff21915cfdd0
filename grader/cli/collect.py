"""`python -m grader collect`: the latest submissions taken in from nbgrader's exchange
(grader.nbgrader.collect), or from the archive Canvas or Moodle downloads
(grader.nbgrader.collect_archive)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.cli.common import DONE, EXIT_STATUSES, INCOMPLETE, add_command, course_of, known
from grader.shown import shown


def add_parser(sub) -> argparse.ArgumentParser:
    s = add_command(sub, "collect", "take the latest submissions in from the exchange, or from "
                                    "the archive Canvas or Moodle downloads",
                    epilog=EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("assignment")
    s.add_argument("--from", dest="archive", metavar="ARCHIVE",
                   help="the .zip of the assignment's submissions downloaded from the LMS "
                        "(Canvas: Download Submissions; Moodle: Download all submissions) "
                        "(default: none, nbgrader's exchange)")
    s.add_argument("--lms", choices=("canvas", "moodle"),
                   help="the LMS the archive comes from (default: none; needed with --from)")
    s.add_argument("--roster", help="with --from, who each file's LMS number is: Canvas: the "
                                    "gradebook export; Moodle: the assignment's grading "
                                    "worksheet (default: none; needed with --from)")
    return s


def run(args) -> int:
    course = course_of(args)
    known(course, args.assignment)
    if args.archive or args.lms or args.roster:
        return _from_archive(args, course)
    from grader.nbgrader.collect import collect, manifest_path

    manifest = collect(course, args.assignment)
    for student, taken in sorted(manifest["students"].items()):
        line = taken.get("error") or f"submitted {taken['time']} ({taken['folder']})"
        flags = f"  [{len(taken['flags'])} file(s) left out]" if taken.get("flags") else ""
        print(f"  {shown(student):<12} {shown(line)}{flags}")
    for refused in manifest["refused"]:
        print(f"  REFUSED {shown(refused['folder'])}: it {shown(refused['why'])}")
    taken = sum("error" not in t for t in manifest["students"].values())
    print(f"{taken} submission(s) collected, {len(manifest['students']) - taken} could not be; "
          f"{len(manifest['refused'])} refused.")
    print(f"Collected into {course.submitted}/STUDENT/{args.assignment}/ (the record: "
          f"{manifest_path(course, args.assignment)}); next: python -m grader autograde "
          f"{args.assignment}")
    return DONE


def _from_archive(args, course) -> int:
    """collect --from: the archive of Canvas's or Moodle's submissions (collect_archive.py)."""
    from grader.nbgrader.collect_archive import LMSES, collect_archive, summary

    if not (args.archive and args.lms):
        raise ValueError("--lms and --roster go with --from ARCHIVE, and --from needs --lms "
                         "canvas or --lms moodle (the LMS the archive was downloaded from)")
    rules = LMSES[args.lms]
    if not args.roster:
        raise ValueError(f"--from needs --roster: the names in {rules.LMS}'s archive carry "
                         f"{rules.LMS}'s {rules.NUMBER}, not the student's login; download "
                         f"{rules.ROSTER}, and give it as --roster")
    for path in (args.archive, args.roster):
        if not Path(path).is_file():
            raise FileNotFoundError(f"no file {path}")
    done = collect_archive(course, args.assignment, Path(args.archive), args.lms,
                           Path(args.roster))
    print(f"Took in {shown(args.assignment)} from {rules.LMS}'s archive "
          f"{shown(args.archive)}, the students of {shown(args.roster)}:")
    for line in summary(done):
        print(line)
    print(f"Taken into {course.submitted}/STUDENT/{args.assignment}/ (the record: "
          f"{done.manifest}); next: python -m grader autograde {args.assignment}")
    if not done.complete:
        print("Not everything in the archive was taken in: see the lines above (exit status 1)",
              file=sys.stderr)
        return INCOMPLETE
    return DONE
