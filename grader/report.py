"""An instructor's report for one assignment: how the class did, and where it struggled.

One self-contained HTML page with the distribution of autograded scores, each test's failure
rate (which idea the class found hard), the likely causes the checks named most often, and every
submission that could not be graded, with links to the students' feedback pages.
"""

from __future__ import annotations

import base64
import html
import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # the report is written to a file, never shown
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
from nbgrader.api import Gradebook, MissingEntry  # noqa: E402

from grader.checks.causes import CAUSES, named_causes  # noqa: E402
from grader.course import COURSE_ID, Course, setup_process  # noqa: E402
from grader.status import load_status  # noqa: E402


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
    with Gradebook(course.db_url, COURSE_ID) as gb:
        auto_max = gb.find_assignment(assignment).max_code_score
        for student in sorted(p.parent.name for p in course.autograded.glob(f"*/{assignment}")):
            try:
                sub = gb.find_submission(assignment, student)
            except MissingEntry:
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


def report(course: Course, assignment: str, to: Path, feedback_dir: Path | None = None) -> Path:
    setup_process()
    scores, auto_max, tests, causes, errors, flags = collect(course, assignment)
    if not scores and not errors:
        raise FileNotFoundError(f"nothing autograded for {assignment} in {course.root}")
    esc = html.escape
    mean = sum(scores.values()) / len(scores) if scores else 0.0
    rows = "".join(
        f"<tr><td>{esc(t.name)}</td><td>{t.points:g}</td><td>{t.failed} of {t.graded}</td>"
        f"<td><div class=bar style='width:{100 * t.rate:.0f}%'></div>{t.rate:.0%}</td></tr>"
        for t in sorted(tests, key=lambda t: -t.rate))
    cause_rows = "".join(f"<tr><td>{esc(CAUSES.get(c, c))}</td><td>{n}</td></tr>"
                         for c, n in causes.most_common(10)) or "<tr><td>none</td><td></td></tr>"
    error_rows = "".join(f"<tr><td>{esc(s)}</td><td>{esc(e)}</td></tr>"
                         for s, e in sorted(errors.items())) or "<tr><td>none</td><td></td></tr>"
    flag_rows = "".join(
        f"<tr><td>{esc(s)}</td><td>{esc(f['kind'])}</td><td>{esc(f['detail'])}</td></tr>"
        for s, fs in sorted(flags.items()) for f in fs) or "<tr><td>none</td><td></td></tr>"

    def link(student):
        if feedback_dir is None:
            return esc(student)
        page = Path(feedback_dir) / f"{student}.html"
        href = page.relative_to(to.parent) if page.is_relative_to(to.parent) else page
        return f"<a href='{esc(str(href))}'>{esc(student)}</a>"

    student_rows = "".join(f"<tr><td>{link(s)}</td><td>{v:g} / {auto_max:g}</td></tr>"
                           for s, v in sorted(scores.items()))
    page = f"""<!doctype html><html><head><meta charset="utf-8">
<title>{esc(assignment)}: class report</title>
<style>body{{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;color:#222}}
table{{border-collapse:collapse;margin:.5em 0 1.5em}}td,th{{padding:.25em .8em;text-align:left;
border-bottom:1px solid #ddd}}.bar{{display:inline-block;height:.8em;background:#c44e52;
margin-right:.4em;vertical-align:middle}}</style></head><body>
<h1>{esc(assignment)}: class report</h1>
<p>{len(scores)} submissions graded, {len(errors)} could not be graded. Mean autograded score
{mean:.1f} of {auto_max:g}. Written answers are graded by hand and not included.</p>
<img alt="histogram of autograded scores"
 src="data:image/png;base64,{_histogram(scores, auto_max)}">
<h2>Tests, hardest first</h2>
<table><tr><th>test</th><th>points</th><th>failed</th><th>failure rate</th></tr>{rows}</table>
<h2>Most common likely causes</h2>
<table><tr><th>cause named by the checks</th><th>students</th></tr>{cause_rows}</table>
<h2>Submissions that could not be graded</h2>
<table><tr><th>student</th><th>reason</th></tr>{error_rows}</table>
<h2>Flags for review</h2>
<p>What the grader saw and stopped: blocked or suspicious code, restored cells, timeouts,
memory and crashes. A flag costs no points by itself; it tells you where to look.</p>
<table><tr><th>student</th><th>flag</th><th>detail</th></tr>{flag_rows}</table>
<h2>Students</h2>
<table><tr><th>student (feedback)</th><th>autograded score</th></tr>{student_rows}</table>
</body></html>"""
    to = Path(to)
    to.parent.mkdir(parents=True, exist_ok=True)
    to.write_text(page)
    return to
