"""An instructor's report for one assignment: how the class did, and where it struggled.

One self-contained HTML page (grader/outputs/templates/report.html.j2) with the distribution of
autograded scores, each test's failure rate (which idea the class found hard), the likely causes the
checks named most often, every submission that could not be graded, the late submissions with the
points the instructor's rule took (grader/nbgrader/late.py), and links to the students' feedback
pages.
"""

from __future__ import annotations

import base64
import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import jinja2
import matplotlib
from markupsafe import Markup

matplotlib.use("Agg")  # the report is written to a file, never shown
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402

from grader.checks.causes import CAUSES, named_causes  # noqa: E402
from grader.course import Course  # noqa: E402
from grader.html_safety import STATIC_PAGE_POLICY, meta_policy  # noqa: E402
from grader.nbgrader import gradebook  # noqa: E402
from grader.nbgrader.config import setup_process  # noqa: E402
from grader.nbgrader.late import lateness, load_policy  # noqa: E402
from grader.pipeline.grades import load_run, load_status  # noqa: E402


@dataclass
class TestStats:
    name: str
    points: float
    failed: int
    graded: int

    @property
    def rate(self) -> float:
        return self.failed / self.graded if self.graded else 0.0


def collect(course: Course, assignment: str):
    """(scores {student: auto score}, auto max, [TestStats], Counter of causes, errors,
    flags {student: [{kind, detail}]})."""
    status = load_status(course.root, assignment)
    errors = {s: v["error"] for s, v in status.items() if v.get("error")}
    flags = {s: v["flags"] for s, v in status.items() if v.get("flags")}
    scores, tests, auto_max = {}, {}, 0.0
    with course.gradebook() as gb:
        auto_max = gb.find_assignment(assignment).max_code_score
        for student in sorted(p.parent.name for p in course.autograded.glob(f"*/{assignment}")):
            sub = gradebook.submission(gb, assignment, student)
            if sub is None:
                continue
            scores[student] = sub.code_score
            for notebook in sub.notebooks:
                for grade in notebook.grades:
                    if grade.cell.cell_type != "code":
                        continue  # written answers are graded by hand
                    stats = tests.setdefault(grade.name,
                                             TestStats(grade.name, grade.max_score, 0, 0))
                    stats.graded += 1
                    stats.failed += (grade.auto_score or 0) < grade.max_score
    causes = count_causes(course.autograded.glob(f"*/{assignment}/*.ipynb"))
    return scores, auto_max, list(tests.values()), causes, errors, flags


@dataclass
class Late:
    """The class's late submissions: the instructor's rule, the due date, and each late
    student's lateness and the points nbgrader's late step took (grader/nbgrader/late.py)."""

    rule: str
    due: str
    students: list[tuple[str, str, float]]  # (student, how late, points taken)


def late_submissions(course: Course, assignment: str, students) -> Late | None:
    """The report's late section; None when the assignment has no rule and no one was late."""
    policy = load_policy(course.root, assignment)
    rows = []
    with course.gradebook() as gb:
        found = gradebook.assignment(gb, assignment)
        if found is None:  # not in the gradebook (yet): no due date, no one late
            return None if policy is None else Late(policy.describe(), "no due date", [])
        due = found.duedate
        for student in students:
            sub = gradebook.submission(gb, assignment, student)
            if sub is None:
                continue
            if sub.total_seconds_late > 0:
                rows.append((student, lateness(sub.total_seconds_late, policy),
                             sub.late_submission_penalty))
    if policy is None and not rows:
        return None
    return Late(policy.describe() if policy else "no late penalty (late submissions are "
                "marked late, no points taken)",
                f"{due:%Y-%m-%d %H:%M} UTC" if due else "no due date", rows)


def count_causes(notebooks) -> Counter:
    """{cause id: students} over graded notebooks (one per student and assignment): causes are
    grouped by their id in grader/checks/causes.py, whatever test named them, and a sentence
    that no id has counts as itself; a student counts once per cause."""
    by_student: dict[str, set] = {}
    for path in notebooks:
        found = by_student.setdefault(Path(path).parent.parent.name, set())
        for cell in nbformat.read(path, as_version=4).cells:
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    found.update(named_causes(output.get("evalue", "")))
    return Counter(c for found in by_student.values() for c in found)


def _histogram(scores: dict[str, float], auto_max: float) -> str:
    fig, ax = plt.subplots(figsize=(6, 3))
    bins = max(1, min(20, int(auto_max) + 1))
    ax.hist(list(scores.values()), bins=bins, range=(0, auto_max), color="#4c72b0",
            edgecolor="white")
    ax.set_title("Autograded scores")
    ax.set_xlabel(f"score (out of {auto_max:g})")
    ax.set_ylabel("students")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def _feedback_href(student: str, to: Path, feedback_dir: Path | None) -> str | None:
    """The link to a student's feedback page: relative to the report where it can be (each
    segment percent-encoded and led by ./, so no name reads as a scheme), else a file: URL."""
    if feedback_dir is None:
        return None
    page = Path(feedback_dir) / f"{student}.html"
    if not page.is_relative_to(to.parent):
        return page.resolve().as_uri()
    return "./" + quote(page.relative_to(to.parent).as_posix())


_ENVIRONMENT = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True, undefined=jinja2.StrictUndefined)
_ENVIRONMENT.filters["number"] = lambda x: f"{x:g}"


def report(course: Course, assignment: str, to: Path, feedback_dir: Path | None = None) -> Path:
    """Write the class report to `to`: a static page (grader/outputs/templates/report.html.j2) under
    a Content-Security-Policy that runs nothing; every name, reason and flag is escaped."""
    setup_process()
    scores, auto_max, tests, causes, errors, flags = collect(course, assignment)
    if not scores and not errors:
        raise FileNotFoundError(f"nothing autograded for {assignment} in {course.root}")
    to = Path(to)
    page = _ENVIRONMENT.get_template("report.html.j2").render(
        policy_meta=Markup(meta_policy(STATIC_PAGE_POLICY)),
        assignment=assignment, scores=scores, errors=sorted(errors.items()),
        mean=sum(scores.values()) / len(scores) if scores else 0.0, auto_max=auto_max,
        histogram=_histogram(scores, auto_max),
        tests=sorted(tests, key=lambda t: -t.rate),
        causes=[(CAUSES.get(c, c), n) for c, n in causes.most_common(10)],
        flags=[(s, f) for s, fs in sorted(flags.items()) for f in fs],
        conditions=load_run(course.root, assignment).get("conditions", []),
        late=late_submissions(course, assignment, sorted(scores)),
        students=[(s, v, _feedback_href(s, to, feedback_dir)) for s, v in sorted(scores.items())])
    to.parent.mkdir(parents=True, exist_ok=True)
    to.write_text(page)
    return to
