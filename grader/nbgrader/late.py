"""An instructor's late penalty, per assignment: the rule, where it is kept, and nbgrader's own
step applying it.

nbgrader marks a submission late by its time against the assignment's due date (in the
gradebook, set by `grader release --due`), and its AssignLatePenalties step, which autograde
runs on every notebook, asks a LateSubmissionPlugin for the penalty; nbgrader's own plugin
knows "none" (the default) and "zero". `LatePenalty` is such a plugin: it reads the rule the
instructor gave `grader release ASSIGNMENT --late-penalty` for that assignment, so every later
autograde of it applies the same rule, and nbgrader's step keeps the penalty between 0 and the
notebook's score (a score never goes below 0) and records it as the notebook's
late_submission_penalty, which the feedback page shows and every export subtracts.

A rule is a percentage of the notebook's points per *started* day (or hour) late, optionally
capped: "10%/day,max=50%" takes 10% for a submission 1 second late, and 20% for one a day and
1 second late. "zero" is nbgrader's own: any lateness scores 0. "none" removes the rule.
The rules live in the course directory, late_penalties.json ({assignment: rule}), beside the
gradebook that holds the due dates.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.plugins import LateSubmissionPlugin
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from grader.files import write_atomic
from grader.nbgrader import gradebook

UNITS = {"day": 86400, "hour": 3600}
POLICY_FILE = "late_penalties.json"
_RULE = re.compile(r"(?P<percent>\d+(?:\.\d+)?)\s*%\s*/\s*(?P<per>day|hour)"
                   r"(?:\s*,\s*max\s*=\s*(?P<cap>\d+(?:\.\d+)?)\s*%)?", re.IGNORECASE)
EXAMPLES = "10%/day, 10%/day,max=50%, 2%/hour, zero (a late submission scores 0) or none"


@dataclass(frozen=True)
class LatePolicy:
    """`percent` of a notebook's points taken per started `per` late, at most `cap` percent in
    all. percent 0 is no penalty ("none"), 100 per day without a cap nbgrader's "zero"."""

    percent: float
    per: str = "day"
    cap: float | None = None

    @classmethod
    def parse(cls, text: str) -> LatePolicy:
        """'10%/day', '10%/day,max=50%', '5%/hour', 'zero' or 'none'; ValueError otherwise."""
        words = text.strip().lower()
        if words == "none":
            return cls(0.0)
        if words == "zero":
            return cls(100.0)
        match = _RULE.fullmatch(words)
        if match is None:
            raise ValueError(f"{text!r} is not a late penalty: write one like {EXAMPLES}")
        percent = float(match["percent"])
        cap = float(match["cap"]) if match["cap"] is not None else None
        for value in (percent, cap):
            if value is not None and not 0 < value <= 100:
                raise ValueError(f"{text!r}: a percentage of the points is more than 0 and at "
                                 "most 100")
        return cls(percent, match["per"].lower(), cap)

    @property
    def none(self) -> bool:
        return self.percent == 0

    def __str__(self) -> str:
        """The rule as it is written and stored ('none', 'zero', '10%/day,max=50%')."""
        if self.none:
            return "none"
        if self.percent == 100 and self.per == "day" and self.cap is None:
            return "zero"
        cap = f",max={self.cap:g}%" if self.cap is not None else ""
        return f"{self.percent:g}%/{self.per}{cap}"

    def describe(self) -> str:
        """The rule in words, for the terminal, the feedback page and the class report."""
        if self.none:
            return "no late penalty"
        if self.percent >= 100:
            return "a late submission scores 0"
        cap = f", at most {self.cap:g}%" if self.cap is not None else ""
        return f"{self.percent:g}% of the points for each started {self.per} late{cap}"

    def units_late(self, seconds_late: float) -> int:
        """Started days (or hours): 1 second late is 1, exactly one day is 1, a day and a second
        is 2."""
        return math.ceil(seconds_late / UNITS[self.per]) if seconds_late > 0 else 0

    def penalty(self, score: float, max_score: float, seconds_late: float) -> float:
        """Points taken from a notebook with `score` of `max_score` handed in `seconds_late`
        after its due date: never more than the score, so the score never goes below 0."""
        taken = self.percent * self.units_late(seconds_late)
        if self.cap is not None:
            taken = min(taken, self.cap)
        points = max_score * min(taken, 100.0) / 100
        return round(max(0.0, min(points, score)), 6)


def policy_path(course_root: Path) -> Path:
    return Path(course_root) / POLICY_FILE


def _policies(course_root: Path) -> dict[str, str]:
    path = policy_path(course_root)
    try:
        stored = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ValueError(f"{path} cannot be read ({e}): set each assignment's penalty again "
                         "with `python -m grader release ASSIGNMENT --late-penalty ...`") from None
    if not isinstance(stored, dict):
        raise ValueError(f"{path} is not a mapping of assignment to late penalty: set each "
                         "assignment's penalty again with `python -m grader release ASSIGNMENT "
                         "--late-penalty ...`")
    return stored


def load_policy(course_root: Path, assignment: str) -> LatePolicy | None:
    """The rule stored for `assignment`, None when it has none."""
    text = _policies(course_root).get(assignment)
    if text is None:
        return None
    try:
        return LatePolicy.parse(str(text))
    except ValueError as e:
        raise ValueError(f"{policy_path(course_root)}, {assignment}: {e}") from None


def save_policy(course_root: Path, assignment: str, policy: LatePolicy) -> Path:
    """Store `policy` for `assignment` (a "none" policy removes it); written whole, then moved
    into place, so an autograde reading it never sees half a file."""
    stored = _policies(course_root)
    if policy.none:
        stored.pop(assignment, None)
    else:
        stored[assignment] = str(policy)
    path = policy_path(course_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, json.dumps(stored, indent=2, sort_keys=True) + "\n")


def set_late_penalty(course, assignment: str, policy: LatePolicy) -> str:
    """Store `policy` for the released `assignment` of `course` (grader.course.Course); returns
    the line saying what now holds, and what does not yet: no due date, submissions graded
    under the rule before."""
    path = save_policy(course.root, assignment, policy)
    if policy.none:
        return f"no late penalty (late submissions are marked late, no points taken; {path})"
    with course.gradebook() as gb:
        due = gb.find_assignment(assignment).duedate
        graded = len(gb.assignment_submissions(assignment))
    line = (f"late penalty {policy}: {policy.describe()}, applied by every autograde of "
            f"{assignment} (kept in {path})")
    if due is None:
        line += "; it has no due date yet: nothing is late until `release --due` sets one"
    else:
        line += f"; due {due:%Y-%m-%d %H:%M} UTC"
    if graded:
        line += (f"; the {graded} submission(s) graded already keep their penalty until "
                 f"`autograde {assignment} --force`")
    return line


class LatePenalty(LateSubmissionPlugin):
    """nbgrader's late-submission plugin, with the rule the instructor stored for the
    assignment being graded (grader.course sets it as AssignLatePenalties.plugin_class). With no
    rule stored, nbgrader's own method (`penalty_method`, 'none' by default).

    nbgrader creates the plugin inside its AssignLatePenalties step (its parent), with the
    notebook, assignment and the open gradebook at hand; the plugin API itself passes only the
    student, the notebook's score and the seconds late, and a percentage needs the notebook's
    points."""

    course_root = Unicode("", help="The course directory, where late_penalties.json is"
                          ).tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float,
                                total_seconds_late: float) -> float | None:
        step = self.parent
        policy = load_policy(Path(self.course_root), step.assignment_id)
        if policy is None or policy.none:
            return super().late_submission_penalty(student_id, score, total_seconds_late)
        notebook = step.gradebook.find_submission_notebook(step.notebook_id, step.assignment_id,
                                                           student_id)
        penalty = policy.penalty(score, notebook.max_score, total_seconds_late)
        self.log.info("%s: %s late: %s: %s points", student_id, total_seconds_late,
                      policy.describe(), penalty)
        return penalty


def lateness(seconds_late: float, policy: LatePolicy | None) -> str:
    """How late, in words: "26.5 hours (2 started days)"."""
    hours = f"{seconds_late / 3600:.1f} hours"
    if policy is None or policy.none or policy.per == "hour":
        units = math.ceil(seconds_late / 3600)
        return f"{hours} ({units} started hour{'s' * (units != 1)})"
    units = policy.units_late(seconds_late)
    return f"{hours} ({units} started day{'s' * (units != 1)})"


class LateRule(NbGraderPreprocessor):
    """For the feedback page: how late the submission was and the rule that took its points, in
    resources["nbgrader"]["late"] (grader/outputs/templates/grader_feedback.html.j2 shows it beside
    nbgrader's penalty line). Nothing for a submission on time."""

    course_root = Unicode("", help="The course directory, where late_penalties.json is"
                          ).tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        policy = load_policy(Path(self.course_root), info["assignment"])
        with Gradebook(info["db_url"]) as gb:
            sub = gradebook.submission(gb, info["assignment"], info["student"])
            seconds = sub.total_seconds_late if sub is not None else 0
        if seconds > 0:
            rule = policy.describe() if policy else "no late penalty"
            info["late"] = f"handed in {lateness(seconds, policy)} late; the rule: {rule}"
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        return cell, resources
