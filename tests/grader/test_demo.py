"""The sample class: `make demo`'s expectations, checked on a fresh run."""

import csv

import pytest

from grader.demo import meets_expectation, run_demo
from grader.demo.sample_class import SELF_ATTENTION_CLASS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    rows = {s.id: r for s, r in run_demo(out, say=lambda message: None)}
    return out, rows


def test_scores_match_each_students_story(demo):
    _, rows = demo
    assert rows["alice"].score == rows["alice"].max_score == 25  # the source solution
    assert rows["bob"].score == 0  # the untouched release
    for student in SELF_ATTENTION_CLASS:
        r = rows[student.id]
        assert r.error is None, f"{student.id} was not graded: {r.error}"
        assert meets_expectation(student, r), f"{student.id}: {r.score} ({student.story})"
    assert rows["erin"].score > 0, "the notebook that raises early is graded, not skipped"


def test_grades_csv_is_nbgraders_format(demo):
    out, rows = demo
    with open(out / "grades.csv") as f:
        table = list(csv.DictReader(f))
    assert {"assignment", "student_id", "raw_score", "score", "max_score"} <= set(table[0])
    assert {row["student_id"]: float(row["score"]) for row in table} == {
        s: r.score for s, r in rows.items()}


def test_feedback_names_the_mistake_without_showing_hidden_tests(demo):
    out, _ = demo
    pages = {p.stem: p.read_text() for p in (out / "feedback").glob("*.html")}
    assert set(pages) == {s.id for s in SELF_ATTENTION_CLASS}
    for html in pages.values():
        assert "BEGIN HIDDEN TESTS" not in html and "import solutions" not in html
        assert "compare_outputs" not in html and "mistakes." not in html
    assert "the softmax was taken over the wrong axis" in pages["carol"]
    assert "not divided by sqrt(d)" in pages["dave"]
    assert "the mask was applied after the softmax" in pages["grace"]
    assert "without transpose(1, 2)" in pages["frank"]
    assert "NameError" in pages["erin"]
