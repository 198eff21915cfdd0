"""The values one submission's grading hands from stage to stage, in one place: plain data that
may cross processes and machines (grader/pipeline/autograde.py runs the stages).

    intake, sanitize (stage 1)  ->  Task (with its Plan, its Limits)
    execute (stage 2, a pool)   ->  Executed, reported by the scheduler as an Outcome
    record (stage 3)            ->  Result, one per student folder

and at every stage, the `Flag`s an instructor should look at.

A flag is a `Flag`, the one type every stage uses, made by `flag` (which checks the kind):
{"kind": ..., "detail": ...}, plain data that crosses processes and is stored as it is
(status/ASSIGNMENT.json, written by grader/pipeline/grades.py). The kind is one of `Kind`, the
detail a sentence in plain words naming the file or cell (e.g. "soft_select.ipynb is a symbolic
link to ../alice/soft_select.ipynb: not graded"). What held for the whole run (a condition of
the machine, such as no writable cgroup) is the run's, kept once, not a flag on each student.

This module imports nothing of the grader: every layer may use it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypedDict

# ----- flags -----------------------------------------------------------------------------------


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


# ----- stage 1 -> stage 2: what executing a submission needs ------------------------------------


@dataclass
class Limits:
    """What one notebook's run may take. The one description of a run's limits: the command
    line sets them for a run, an assignment's metadata for its notebooks (grader.metadata),
    and they travel to the pool as this value (as its fields in nbgrader's configuration); the
    sandbox enforces them (grader/sandbox/session.py)."""

    cell_timeout: float = 120.0  # CPU seconds one cell (or one call from a test) may take
    notebook_timeout: float = 900.0  # seconds for the whole notebook
    memory_bytes: int = 6 * 2**30  # address space of the student's process
    max_processes: int = 64  # processes the student's code may start (when enforceable)
    max_file_bytes: int = 256 * 2**20  # largest file the student's code may write

    def updated(self, fields) -> Limits:
        """These limits with `fields` ({name: value}) replacing theirs; names that are not
        fields of Limits (an assignment's metadata may hold anything) are left out."""
        known = {f.name for f in dataclasses.fields(self)}
        return dataclasses.replace(self, **{k: v for k, v in fields.items() if k in known})


@dataclass
class Plan:
    """Everything the execution of one submission needs, as data (it may travel to another
    host): built from the course in the main process (grader.nbgrader.execute.plan), used by
    grader.judge.run.run_notebook."""

    files: dict[str, bytes]  # the scratch folder: the student's files, the released ones over
    answers: dict[str, list[str]]  # notebook -> the names its solution cells define
    limits: dict[str, Limits]  # notebook -> its limits
    flags: list[Flag] = field(default_factory=list)
    preload: list[str] = field(default_factory=list)  # for the sandbox (sandbox_preload_for)


@dataclass
class Task:
    """Everything needed to execute one submission, as data (it may travel to another host)."""

    assignment: str
    student: str
    notebooks: dict[str, str]  # notebook name -> sanitized notebook JSON (stage 1)
    plan: Plan  # the scratch files, the declared answers, the limits
    unconfined: bool = False  # grade even without the sandbox (the instructor's explicit choice)


# ----- stage 2 -> stage 3: what executing it gave ----------------------------------------------


class Executed(TypedDict):
    """What a pool hands back for one submission (grader.pipeline.pools.execute)."""

    notebooks: dict[str, str]  # notebook name -> executed notebook JSON
    flags: list[Flag]
    seconds: float  # wall time
    executed_by: str  # host:pid of the process that executed it


@dataclass(frozen=True)
class Finished:
    """The student's submission was executed: `result` is what the pool handed back
    (grader.pipeline.pools.execute)."""

    student: str
    result: Executed


@dataclass(frozen=True)
class Failed:
    """The grader's machinery could not execute the student's submission (never the student's
    fault): `error` says why, in the words the student's row shows."""

    student: str
    error: str


@dataclass(frozen=True)
class Stuck:
    """The student's submission still ran after `seconds`, past every limit: the watchdog
    stopped it."""

    student: str
    seconds: float


Outcome = Finished | Failed | Stuck  # how stage 2 ended for one student (the scheduler's word)


# ----- stage 3 -> the command: what grading gave ------------------------------------------------


@dataclass
class Result:
    student: str
    score: float  # everything graded so far (autograded + manual)
    max_score: float
    auto_score: float  # the autograded tests alone
    auto_max: float
    error: str | None = None  # why the submission could not be graded
    needs_manual: bool = False  # written answers wait for the instructor
    flags: list[Flag] = field(default_factory=list)  # what the instructor should look at
    skipped: bool = False  # graded in an earlier run and unchanged since
    infrastructure: bool = False  # the error was the grader's, not the student's
    seconds: float = 0.0  # time to execute the notebook
    executed_by: str = ""  # host:pid of the process that executed it
    failed: dict[str, str] = field(default_factory=dict)  # "NOTEBOOK: TEST" -> its error

    @property
    def status(self) -> str:
        return "error" if self.error else "graded"
