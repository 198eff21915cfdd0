"""Taking in a class from Canvas or Moodle: `python -m grader collect NAME --from ARCHIVE --lms
canvas|moodle --roster FILE`.

The LMS's archive of an assignment's submissions (read by grader.lms.archive, which says what
is taken in for whom and why the rest is not) becomes what `collect` from nbgrader's exchange
makes: each student's notebooks in course.submitted/STUDENT/NAME, copied there by the intake
(grader.intake.take_in, as every submission is), and the manifest collected/NAME.json
that `autograde NAME` grades from (grader.nbgrader.collect.load_manifest).

When a student submitted is not the intake's time, and is not invented: the LMS's archive does
not say it. The copy has no timestamp.txt, so nbgrader computes no lateness and no late
penalty for it; the manifest keeps what the LMS does say, Canvas's LATE marker (`late`) and the
time Moodle's worksheet wrote (`lms_time`, as Moodle wrote it). An archive taken in replaces
the students an earlier archive of the assignment took in (a student no longer in it is no
longer graded); students collected from the exchange stay.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from grader import intake
from grader.course import Course
from grader.files import write_atomic
from grader.lms import archive, canvas, moodle
from grader.nbgrader.collect import load_manifest, manifest_path
from grader.shown import shown
from grader.submission import flag

LMSES = {"canvas": canvas, "moodle": moodle}


@dataclass
class Collected:
    """What one archive gave: the plan, and the manifest's entry of each student of it."""

    plan: archive.Plan
    students: dict[str, dict] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)  # taken in from an earlier archive
    manifest: Path | None = None  # collected/NAME.json, written

    @property
    def complete(self) -> bool:
        """Every file of the archive taken in (or superseded), every student's intake done."""
        return not self.plan.not_taken_in and not any("error" in s
                                                      for s in self.students.values())


def collect_archive(course: Course, assignment: str, source: Path, lms: str,
                    roster: Path) -> Collected:
    """Take `assignment` in from `source`, the archive `lms` downloads, its students named by
    `roster` (Canvas: the gradebook export; Moodle: the grading worksheet). ValueError before
    anything is written when the roster or the archive cannot be read as that LMS's."""
    rules = LMSES[lms]
    people = archive.index_people(rules.people(roster), rules, roster)
    with archive.open_archive(source) as zf:
        plan = archive.plan(zf, rules, people, {f"{n}.ipynb" for n in
                                                course.notebooks(assignment)})
        done = Collected(plan)
        course.prepare()
        with tempfile.TemporaryDirectory(prefix=".archive-", dir=course.root) as staging:
            for student in sorted(plan.people):
                done.students[student] = _take_in(course, assignment, zf, plan, student,
                                                  Path(staging), rules)
    done.manifest, done.dropped = _write_manifest(course, assignment, done.students, plan,
                                              source, lms)
    return done


def _take_in(course: Course, assignment: str, zf, plan: archive.Plan, student: str,
             staging: Path, rules: archive.Rules) -> dict:
    """The manifest's entry of one student: their notebooks unpacked into `staging`, then taken
    into the course by the intake; or {"error": why} (nothing of theirs could be taken in)."""
    person = plan.people[student]
    taken = plan.students.get(student, [])
    left_out = plan.left_out.setdefault(student, [])
    entry = {"folder": ", ".join([t.member for t in taken] + [x.member for x in left_out]),
             "time": None, "lms": rules.LMS,
             "late": plan.late.get(student),
             "lms_time": person.submitted}
    folder = staging / student / assignment
    failed = archive.extract(zf, taken, folder)
    left_out += failed
    # As the intake's own: by the file's place in the submission (`autograde` then says that
    # a notebook of the assignment is empty, say, rather than missing), the member named; by
    # the member alone where a file taken in has that place (a later copy, from Canvas).
    placed = {t.path for t in taken if t.member not in {x.member for x in failed}}
    why_left = {x.member if x.path in placed else "/".join(x.path):
                f"{x.why} (in {rules.LMS}'s archive: {x.member})" for x in left_out}
    flags = [flag("intake", f"{path} {why}: not graded") for path, why in why_left.items()]
    if len(failed) == len(taken):  # nothing unpacked: no notebook of theirs at all
        return {**entry, "error": "no notebook of theirs could be taken in from the archive: "
                                  + "; ".join(f"{p} {w}" for p, w in why_left.items())}
    try:
        taken_in = intake.take_in(course, assignment, student, folder)
    except (intake.IntakeError, OSError) as e:
        return {**entry, "error": str(e)}
    finally:
        shutil.rmtree(folder.parent, ignore_errors=True)
    # No time the LMS did not give: without timestamp.txt, nbgrader's submission has none.
    (taken_in.folder / intake.TIMESTAMP).unlink(missing_ok=True)
    return {**entry, "flags": flags + taken_in.flags,
            "left_out": {**why_left, **taken_in.left_out}}


def _write_manifest(course: Course, assignment: str, students: dict[str, dict],
                  plan: archive.Plan, source: Path, lms: str) -> tuple[Path, list[str]]:
    manifest = load_manifest(course, assignment)
    dropped = sorted(s for s, entry in manifest["students"].items()
                     if entry.get("lms") and s not in students)
    for student in dropped:
        del manifest["students"][student]
    manifest["students"].update(students)
    manifest["archive"] = {
        "file": str(source), "lms": lms,
        "not_taken_in": [{"member": m, "why": why} for m, why in plan.not_taken_in],
        "superseded": [{"member": m, "kept": kept} for m, kept in plan.superseded],
        "no_submission": [p.id for p in plan.absent]}
    path = manifest_path(course, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(manifest, indent=1))
    return path, dropped


def summary(done: Collected) -> list[str]:
    """The lines `collect --from` prints: one per student taken in, per file not taken in,
    per older copy left for a newer one, then the students with nothing in the archive. Every
    name is shown escaped (it may hold a student's text)."""
    plan, lines = done.plan, []
    for student, entry in sorted(done.students.items()):
        if "error" in entry:
            lines.append(f"  {shown(student):<12} NOT TAKEN IN: {shown(entry['error'])}")
            continue
        files = ", ".join("/".join(t.path) for t in plan.students.get(student, []))
        said = []
        if entry.get("late"):
            said.append(f"{entry['lms']} marked it LATE")
        if entry.get("lms_time"):
            said.append(f"last modified {entry['lms_time']} (Moodle's worksheet)")
        if entry.get("left_out"):
            said.append(f"{len(entry['left_out'])} file(s) left out, below")
        lines.append(f"  {shown(student):<12} {shown(files)}"
                     + (f"  [{shown('; '.join(said))}]" if said else ""))
    for member, kept in plan.superseded:
        lines.append(f"  OLDER COPY   {shown(member)}: not taken in, {shown(kept)} is the "
                     "later upload")
    for member, why in plan.not_taken_in:
        lines.append(f"  NOT TAKEN IN {shown(member)}: it {shown(why)}")
    if plan.absent:
        lines.append("  no submission in the archive: " + ", ".join(
            f"{shown(p.id)} ({shown(p.name)})" for p in plan.absent))
    for student in done.dropped:
        lines.append(f"  {shown(student):<12} no longer in the archive: taken out of what "
                     "autograde grades")
    taken = sum("error" not in e for e in done.students.values())
    late = sum(bool(e.get("late")) for e in done.students.values() if "error" not in e)
    lines.append(f"{taken} student(s) taken in" + (f" ({late} marked LATE)" if late else "")
                 + f", {len(done.students) - taken} could not be; {len(plan.not_taken_in)} "
                 f"file(s) of the archive not taken in, {len(plan.superseded)} older copy(ies) "
                 f"left for a later upload; {len(plan.absent)} student(s) of the roster with "
                 "no submission.")
    return lines
