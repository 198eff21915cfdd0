"""Generate, classify and grade the mutants of one assignment, and say how the tests did.

Each mutant is first judged by the differential harness alone (equivalence.py), then graded the
way an instructor grades: all the assignment's mutants (and the unchanged solution, a control)
as one class of submissions, one `autograde` run of the released assignment. What each failed
test says is read from the autograded notebooks, as tests/catalogue/test_catalogue.py reads it.

Outcome of each mutant:
- equivalent: agrees with the reference everywhere; must keep full marks ("equivalent, lost
  points" otherwise: a test rejects a right answer);
- killed: not equivalent, and lost points; its messages' causes are then `right` (exactly the
  cause expected.py expects), `wrong` (a cause other than the expected one, or any cause where
  expected.py expects none: NO_CAUSE), `none` (no cause named), or `unverified` (a cause named
  where nothing says which to expect: listed for review);
- survived: not equivalent, and full marks: a slip no test sees.

Beside the autograde run, `grader check`'s verdicts on every mutant's visible tests, run in one
kernel as the catalogue runs them (tests/support/verdicts.py): where the two disagree on a
mutant, a student would see one verdict and be graded by another (a goal missed, whatever the
status).
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.checks.causes import named_causes
from grader.course import REPO, Course
from grader.demo.sample_class import Student, write_class
from grader.nbgrader.release import release
from grader.pipeline.autograde import autograde
from tests.mutants import equivalence
from tests.mutants.operators import Mutant, mutants
from tests.mutants.regimes import probes
from tests.support.verdicts import checked, disagreements, failed_tests

ASSIGNMENTS = ["soft_select", "by_hand", "rnn_attention", "self_attention", "transformer",
               "efficient_attention", "tiny_gpt"]  # the course's order
CONTROL = "reference"  # the unchanged solution, graded beside the mutants


@dataclass
class Outcome:
    mutant: str
    cell: str
    operator: str
    what: str
    diff: str
    expected_cause: str | None
    equivalent: bool
    disagreement: str | None  # the harness's first difference (None: equivalent)
    score: float | None = None
    max_score: float | None = None
    failed: dict[str, str] = field(default_factory=dict)  # test grade_id -> message
    named: list[str] = field(default_factory=list)
    check_disagrees: list[str] = field(default_factory=list)  # grader check vs autograde

    @property
    def lost_points(self) -> bool:
        return self.score is not None and self.score < self.max_score

    @property
    def status(self) -> str:
        if self.score is None:
            return "not graded"
        if self.equivalent:
            return "equivalent, lost points" if self.lost_points else "equivalent"
        return "killed" if self.lost_points else "survived"

    @property
    def cause(self) -> str | None:
        """right / wrong / none / unverified, for a killed mutant."""
        if self.status != "killed":
            return None
        named = set(self.named)
        if not named:
            return "none"
        if self.expected_cause is None:
            return "unverified"
        return "right" if named == {self.expected_cause} else "wrong"  # NO_CAUSE: wrong


@dataclass
class Report:
    assignment: str
    generated: int
    outcomes: list[Outcome]
    seconds: dict[str, float]
    control_full_marks: bool

    def count(self, status=None, cause=None) -> int:
        return sum((status is None or o.status == status) and (cause is None or o.cause == cause)
                   for o in self.outcomes)

    def problems(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in ("survived", "equivalent, lost points",
                                                         "not graded") or o.cause == "wrong"
                or o.check_disagrees]


def pick(all_mutants: list[Mutant], sample: int | None, seed: int) -> list[Mutant]:
    """All mutants, or a seeded sample of them (in generation order, for a stable report)."""
    if sample is None or sample >= len(all_mutants):
        return all_mutants
    chosen = set(random.Random(seed).sample(range(len(all_mutants)), sample))
    return [m for i, m in enumerate(all_mutants) if i in chosen]


def classify(assignment: str, chosen: list[Mutant], seed: int = 0) -> list[Outcome]:
    source_nb = REPO / "assignments" / assignment / f"{assignment}.ipynb"
    program = equivalence.cells(source_nb)
    grid = probes(assignment)
    reference = equivalence.Reference.of(program, grid, seed)
    out = []
    for m in chosen:
        why = equivalence.verdict(reference, equivalence.mutated(
            program, m.cell, m.edit.old, m.edit.new), grid, seed)
        out.append(Outcome(m.id, m.cell, m.operator, m.what, m.diff, m.cause, why is None, why))
    return out


def grade(assignment: str, chosen: list[Mutant], outcomes: list[Outcome], workers: int,
          folder: Path) -> bool:
    """Grade every chosen mutant and the control in one autograde run; fill in the outcomes.
    Returns whether the control (the unchanged solution) earned full marks."""
    course = Course(folder / "course")
    release(course, assignment)
    students = [Student(CONTROL, "the source solution", "full")] + [
        Student(m.student, m.what, "partial", edits=[m.edit]) for m in chosen]
    submissions = folder / "submissions"
    for notebook in course.notebooks(assignment):
        write_class(course.source / assignment / f"{notebook}.ipynb",
                    course.release / assignment / f"{notebook}.ipynb", students, submissions,
                    assignment)
    with ThreadPoolExecutor(1) as beside:  # one kernel, beside the autograde run
        checks = beside.submit(checked, course, assignment, students, folder)
        graded = autograde(course, assignment, submissions, workers=workers)
        results = {r.student: r for r in graded}
        verdicts = checks.result()
    for m, outcome in zip(chosen, outcomes, strict=True):
        result = results.get(m.student)
        if result is None or result.error:
            outcome.failed = {"(grading)": getattr(result, "error", None) or "no result"}
            continue
        outcome.score, outcome.max_score = result.auto_score, result.auto_max
        outcome.failed = failed_tests(course, m.student, assignment)
        outcome.named = sorted({c for message in outcome.failed.values()
                                for c in named_causes(message)})
        outcome.check_disagrees = disagreements(assignment, outcome.failed,
                                                verdicts.get(m.student, {}))
    control = results.get(CONTROL)
    return bool(control and not control.error and control.auto_score == control.auto_max)


def run(assignment: str, sample: int | None = None, seed: int = 0, workers: int = 1,
        chosen: list[Mutant] | None = None) -> Report:
    if assignment not in ASSIGNMENTS:
        raise ValueError(f"unknown assignment {assignment!r}: one of {', '.join(ASSIGNMENTS)}")
    start = time.monotonic()
    every = mutants(REPO / "assignments" / assignment / f"{assignment}.ipynb", assignment)
    chosen = pick(every, sample, seed) if chosen is None else chosen
    outcomes = classify(assignment, chosen, seed)
    classified = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"mutants-{assignment}-") as tmp:
        control = grade(assignment, chosen, outcomes, workers, Path(tmp))
    seconds = {"classify": classified - start, "grade": time.monotonic() - classified}
    return Report(assignment, len(every), outcomes, seconds, control)


def write_json(report: Report, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{report.assignment}.json"
    data = {"assignment": report.assignment, "generated": report.generated,
            "graded": len(report.outcomes), "seconds": report.seconds,
            "control_full_marks": report.control_full_marks,
            "outcomes": [asdict(o) | {"status": o.status, "cause": o.cause}
                         for o in report.outcomes]}
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


COLUMNS = ("generated", "graded", "equivalent", "killed", "survived", "eq. lost points",
           "right", "none", "wrong", "unverified", "check != autograde", "seconds")


def table(reports: list[Report]) -> str:
    rows = [("assignment", *COLUMNS)]
    for r in reports:
        rows.append((r.assignment, r.generated, len(r.outcomes), r.count("equivalent"),
                     r.count("killed"), r.count("survived"), r.count("equivalent, lost points"),
                     r.count(cause="right"), r.count(cause="none"), r.count(cause="wrong"),
                     r.count(cause="unverified"),
                     sum(bool(o.check_disagrees) for o in r.outcomes),
                     f"{sum(r.seconds.values()):.0f}"))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(v).rjust(w) if i else str(v).ljust(w)
                               for i, (v, w) in enumerate(zip(row, widths, strict=True)))
                     for row in rows)


def details(report: Report) -> str:
    """The outcomes a person must look at: survivors, equivalent mutants that lost points,
    wrong and unverified causes."""
    lines = []
    if not report.control_full_marks:
        lines.append(f"{report.assignment}: the unchanged solution did not earn full marks")
    for o in report.outcomes:
        if o.status in ("survived", "equivalent, lost points", "not graded") or \
                o.cause in ("wrong", "unverified") or o.check_disagrees:
            label = o.status if o.cause in (None, "right", "none") else f"cause {o.cause}"
            if o.check_disagrees:
                label += ", grader check disagrees with autograde"
            lines.append(f"\n{label}: {o.mutant} ({o.operator}: {o.what}); expected cause "
                         f"{o.expected_cause}; named {o.named or 'none'}")
            if o.disagreement:
                lines.append(f"  harness: {o.disagreement}")
            lines.extend(f"  check vs autograde: {d.splitlines()[0][:150]}"
                         for d in o.check_disagrees)
            if o.failed and o.status != "survived":
                lines.extend(f"  {gid}: {msg.splitlines()[0][:150]}"
                             for gid, msg in o.failed.items())
            lines.extend("  " + line for line in o.diff.splitlines())
    return "\n".join(lines)
