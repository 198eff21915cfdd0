"""What the grader records about each student besides points: the flags an instructor should
look at, and the outcome of the last autograde run. This module is their one owner and
status/ASSIGNMENT.json their one store; every stage hands its flags back as a value. What held
for the whole run (a condition of the machine, such as no writable cgroup) is the run's, kept
once in status/run/ASSIGNMENT.json, not a flag on each student.

A flag is a `Flag`, the one type every stage uses, made by `flag` (which checks the kind):
{"kind": ..., "detail": ...}, plain data that crosses processes and is stored as it is. The
kind is one of `Kind`, the detail a sentence in plain words naming the file or cell (e.g.
"soft_select.ipynb is a symbolic link to ../alice/soft_select.ipynb: not graded").
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TypedDict

from grader.files import write_atomic
from grader.shown import shown


class Kind(StrEnum):
    """Every kind of flag, with what it means for the instructor."""

    INTAKE = "intake"  # a file of the submission was left out (a link, a FIFO, ...)
    EXTRA = "extra"  # a notebook the assignment does not have; not graded
    METADATA = "metadata"  # nbgrader metadata changed or forged; restored
    RESTORED = "restored"  # an instructor cell deleted or edited; restored
    SUSPICIOUS = "suspicious"  # the code does something an instructor may want to look at
    SHADOWING = "shadowing"  # a file that would hide a package the notebook imports
    HELPER = "helper"  # a released helper file differed; the instructor's copy was used
    REDEFINED = "redefined"  # a name of the instructor's redefined; the tests used theirs
    TIMEOUT = "timeout"  # a cell or the notebook ran out of time
    MEMORY = "memory"  # the memory limit was reached
    CRASH = "crash"  # the student's process died
    FLOOD = "flood"  # an oversized or malformed reply
    TAMPERED = "tampered"  # a test cell that does not compile
    STUCK = "stuck"  # grading outlived every limit; stopped by the watchdog
    UNCONFINED = "unconfined"  # graded without the sandbox (the instructor's explicit choice)
    LIMITS = "limits"  # limits enforced by rlimits, not a cgroup
    GRADER = "grader"  # the instructor's own code failed on the grader's side


class Flag(TypedDict):
    kind: str  # a Kind's value
    detail: str


def flag(kind: Kind | str, detail: str) -> Flag:
    """The flag of `kind` (refused with ValueError unless it is one of Kind) saying `detail`."""
    return {"kind": Kind(kind).value, "detail": detail}


def unique(flags: list[Flag]) -> list[Flag]:
    """Flags in order, each once."""
    out: list[Flag] = []
    for f in flags:
        if f not in out:
            out.append(f)
    return out


def status_path(course_root: Path, assignment: str) -> Path:
    return Path(course_root) / "status" / f"{assignment}.json"


def run_path(course_root: Path, assignment: str) -> Path:
    """Beside the students' status file, the run's own record: what held for every student of
    the last run (a condition of the machine), said once rather than on each student's row."""
    return Path(course_root) / "status" / "run" / f"{assignment}.json"


def load_status(course_root: Path, assignment: str) -> dict:
    path = status_path(course_root, assignment)
    return json.loads(path.read_text()) if path.exists() else {}


def load_run(course_root: Path, assignment: str) -> dict:
    """The last run's own record: {"conditions": [the machine's conditions, in words]}."""
    path = run_path(course_root, assignment)
    return json.loads(path.read_text()) if path.exists() else {}


def save_status(course_root: Path, assignment: str, results, hashes: dict | None = None,
                run: dict | None = None) -> Path:
    """Record every student's outcome of the last autograde run (read back by the report).
    `results`: objects with student, auto_score, auto_max, error, flags, seconds, skipped.

    The record is text for people (the report, the terminal): the folder name, the error and
    each flag's detail quote what a student wrote (file names, link targets, a rejected folder's
    name), so they are stored `shown` (grader.shown): no control character, no lone surrogate
    (which no page or terminal could write), whatever reads them. A valid student id is stored
    as it is."""
    path = status_path(course_root, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    old = load_status(course_root, assignment)
    for r in results:
        key = shown(r.student)
        entry = {"auto_score": r.auto_score, "auto_max": r.auto_max,
                 "error": None if r.error is None else shown(r.error),
                 "flags": [{**f, "detail": shown(f["detail"])} for f in r.flags],
                 "seconds": round(r.seconds, 3)}
        if r.skipped:
            entry["hash"] = old.get(key, {}).get("hash")
        elif hashes and r.student in hashes and not r.error:
            entry["hash"] = hashes[r.student]
        old[key] = entry
    write_atomic(path, json.dumps(old, indent=1, sort_keys=True))
    if run is not None:
        run_path(course_root, assignment).parent.mkdir(exist_ok=True)
        write_atomic(run_path(course_root, assignment), json.dumps(run, indent=1, sort_keys=True))
    return path
