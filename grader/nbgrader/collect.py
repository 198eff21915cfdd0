"""Collecting submissions from nbgrader's exchange, trusting only what the file system says.

In nbgrader's exchange every student writes into one shared `inbound/` folder, and the folder
name of a submission (STUDENT+ASSIGNMENT+TIMESTAMP+RANDOM) is written by the student's own
process, as is its timestamp.txt. nbgrader's collect takes both at their word: it only warns when
the owner of the folder is someone else (so alice can hand in as bob), and it picks the latest
submission, and the time that decides lateness, from the student's timestamp.

`VerifiedCollect` is nbgrader's collect with three changes, plugged in through nbgrader's
`ExchangeFactory.collect` (so the formgrader's Collect button uses it too):
  - a submission whose folder belongs to another Unix user than the student it names is refused
    (logged, and listed in the manifest below), never collected;
  - the submission time is the file system's: the latest change time (ctime) of the folder and
    everything in it. A process cannot set a ctime (only the kernel does, to the current time),
    so a student can make a submission later, never earlier;
  - the files are copied by the intake (grader.intake.take_in), as any submission is:
  links,
    FIFOs, devices and files of other users are left out and flagged, never followed or opened.

Each run writes its manifest, collected/ASSIGNMENT.json in the course: per student the exchange
folder taken, its time and the intake's flags, and the refused folders; `autograde` grades what
it lists and reads the flags from it.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from datetime import UTC, datetime
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.utils import check_mode

from grader import intake
from grader.course import Course
from grader.files import write_atomic
from grader.nbgrader import gradebook

log = logging.getLogger(__name__)


def exchange_time(folder: Path, limits: intake.SubmissionLimits = intake.LIMITS) -> datetime:
    """The latest change time of `folder` and of everything under it, links not followed.
    The walk stops past the intake's limits (such a submission is refused when copied)."""
    latest = os.lstat(folder).st_ctime
    stack, seen = [(str(folder), 0)], 0
    while stack and seen <= limits.max_files:
        path, depth = stack.pop()
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    st = entry.stat(follow_symlinks=False)
                    latest, seen = max(latest, st.st_ctime), seen + 1
                    if stat.S_ISDIR(st.st_mode) and depth < limits.max_depth:
                        stack.append((entry.path, depth + 1))
        except OSError:
            # removed while we looked (its folder's ctime changed with it), or made unreadable
            # by its owner (the copy then leaves it out or fails, for that student alone)
            continue
    return datetime.fromtimestamp(latest, UTC)


def manifest_path(course: Course, assignment: str) -> Path:
    return course.root / "collected" / f"{assignment}.json"


def load_manifest(course: Course, assignment: str) -> dict:
    """{"students": {student: {"folder", "time", "flags"}}, "refused": [...]}, or empty."""
    try:
        return json.loads(manifest_path(course, assignment).read_text())
    except FileNotFoundError:
        return {"students": {}, "refused": []}


class VerifiedCollect(ExchangeCollect):
    """nbgrader's collect, with the owner checked and the time taken from the file system."""

    def init_src(self):
        # nbgrader's own init_src parses the time in every folder name (a bad one would stop
        # the whole collect); only its checks of the course are kept.
        if not self.coursedir.course_id:
            self.fail("No course id specified. Re-run with --course flag.")
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        if not check_mode(self.inbound_path, read=True, execute=True):
            self.fail(f"You don't have read permissions for the directory: {self.inbound_path}")
        self.duedate = _duedate(self.coursedir)
        pattern = f"{self.coursedir.student_id or '*'}+{self.coursedir.assignment_id}+*"
        self.refused = []
        latest: dict[str, dict] = {}
        for path in sorted(Path(self.inbound_path).glob(pattern)):
            rec = self._verified(path)
            if rec is None:
                continue
            keep = latest.get(rec["username"])
            if keep and self.before_duedate and self.duedate is not None and (
                    keep["timestamp"] <= self.duedate < rec["timestamp"]):
                continue  # (nbgrader's --before-duedate) one in time beats any late one
            if keep is None or rec["timestamp"] > keep["timestamp"]:
                latest[rec["username"]] = rec
        self.src_records = [latest[s] for s in sorted(latest)]

    def _verified(self, path: Path) -> dict | None:
        """One inbound folder as nbgrader's `src_records` lists it, or None (and refused) when it
        cannot be trusted."""
        claimed = path.name.split("+")[0]
        try:
            st = os.lstat(path)
        except OSError as e:  # gone since the glob
            self.log.warning("Skipped %s: %s", path, e.strerror)
            return None
        owner = intake.user_name(st.st_uid)
        why = None
        if not stat.S_ISDIR(st.st_mode):
            why = "is not a folder"
        elif owner != claimed:
            why = f"names {claimed} but belongs to {owner}"
        elif problem := intake.id_problem(claimed):
            why = f"names an invalid student id: {problem}"
        if why:
            self.log.error("Refused %s: it %s; not collected", path, why)
            self.refused.append({"folder": path.name, "owner": owner, "why": why})
            return None
        try:
            when = exchange_time(path)
        except OSError as e:  # removed by its owner since the lstat above
            self.log.warning("Skipped %s: %s", path, e.strerror)
            return None
        return {"username": claimed, "filename": path.name, "uid": st.st_uid,
                "timestamp": when}

    def copy_files(self):
        course = Course.at(Path(self.coursedir.root))
        assignment = self.coursedir.assignment_id
        manifest = load_manifest(course, assignment)
        manifest["refused"] = self.refused
        for rec in self.src_records:
            student = rec["username"]
            folder = Path(self.inbound_path) / rec["filename"]
            try:
                taken = intake.take_in(course, assignment, student, folder,
                                       now=rec["timestamp"], owner=rec["uid"])
            except (intake.IntakeError, OSError) as e:  # this student's alone: the others go on
                self.log.error("%s: %s", student, e)
                manifest["students"][student] = {"folder": rec["filename"], "error": str(e)}
                continue
            # nbgrader's submit always writes a timestamp.txt: left out (the time above is the
            # file system's), but no flag on every student for it
            taken.left_out.pop(intake.TIMESTAMP, None)
            self.log.info("Collected %s from %s (submitted %s)", student, rec["filename"],
                          taken.timestamp)
            manifest["students"][student] = {"folder": rec["filename"], "time": taken.timestamp,
                                           "flags": taken.flags, "left_out": taken.left_out}
        path = manifest_path(course, assignment)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(manifest, indent=1))


def _duedate(coursedir) -> datetime | None:
    """The assignment's due date in the gradebook (naive UTC, as nbgrader stores it), or None."""
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        found = gradebook.assignment(gb, coursedir.assignment_id)
        if found is None:
            return None
        due = found.duedate
    return due.replace(tzinfo=UTC) if due is not None and due.tzinfo is None else due


def collect(course: Course, assignment: str) -> dict:
    """Collect `assignment` from the course's exchange; returns the manifest written."""
    from grader.nbgrader.api import api_for, ok

    ok(api_for(course).collect(assignment), f"collecting {assignment}")
    return load_manifest(course, assignment)


