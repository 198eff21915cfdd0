"""The sample classes: `make demo`'s expectations, checked on a fresh run of all assignments."""

import csv

import pytest

from grader.demo.run import meets_expectation
from grader.demo.sample_class import SAMPLE_CLASSES

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo(sample_classes):
    """`run_demo` on every assignment, once a session (tests/conftest.py); shared read-only."""
    return sample_classes.out, sample_classes.rows


def test_demo_covers_every_assignment(demo):
    _, rows = demo
    assert set(rows) == set(SAMPLE_CLASSES) == {
        "soft_select", "by_hand", "rnn_attention", "self_attention", "transformer",
        "efficient_attention", "tiny_gpt"}


@pytest.mark.parametrize("assignment", list(SAMPLE_CLASSES))
def test_scores_match_each_students_story(demo, assignment):
    _, rows = demo
    results = rows[assignment]
    alice, bob = results["alice"], results["bob"]
    assert alice.auto_score == alice.auto_max > 0, "the source solution gets full marks"
    assert alice.max_score > alice.auto_max, "written answers wait for the instructor"
    assert alice.needs_manual
    assert bob.auto_score == 0, "the untouched release gets zero autograded points"
    for student in SAMPLE_CLASSES[assignment]:
        r = results[student.id]
        assert r.error is None, f"{student.id} was not graded: {r.error}"
        assert meets_expectation(student, r), f"{student.id}: {r.auto_score} ({student.story})"


def test_the_notebook_that_raises_early_is_graded(demo):
    _, rows = demo
    erin = rows["self_attention"]["erin"]
    assert erin.error is None and erin.auto_score > 0


def test_grades_csv_is_nbgraders_format(demo):
    out, rows = demo
    with open(out / "grades.csv") as f:
        table = list(csv.DictReader(f))
    assert {"assignment", "student_id", "raw_score", "score", "max_score"} <= set(table[0])
    exported = {(row["assignment"], row["student_id"]): float(row["score"]) for row in table}
    for assignment, results in rows.items():
        for student, r in results.items():
            assert exported[(assignment, student)] == r.score


def feedback_pages(out, assignment):
    return {p.stem: p.read_text() for p in (out / "feedback" / assignment).glob("*.html")}


@pytest.mark.parametrize("assignment", list(SAMPLE_CLASSES))
def test_feedback_has_no_hidden_tests_or_mark_schemes(demo, assignment):
    out, _ = demo
    pages = feedback_pages(out, assignment)
    assert set(pages) == {s.id for s in SAMPLE_CLASSES[assignment]}
    for html in pages.values():
        assert "BEGIN HIDDEN TESTS" not in html and "import solutions" not in html
        assert "compare_outputs" not in html and "mistakes." not in html
        assert "Mark scheme" not in html


def test_feedback_names_the_mistakes(demo):
    out, _ = demo
    pages = feedback_pages(out, "self_attention")
    assert "the softmax was taken over the wrong axis" in pages["carol"]
    assert "not divided by sqrt(d)" in pages["dave"]
    assert "the mask was applied after the softmax" in pages["grace"]
    assert "without transpose(1, 2)" in pages["frank"]
    assert "NameError" in pages["erin"]
    assert "tanh is missing" in feedback_pages(out, "rnn_attention")["carol"]
    assert "this form computes the other one" in feedback_pages(out, "transformer")["dave"]


@pytest.mark.parametrize("assignment", list(SAMPLE_CLASSES))
def test_class_report_shows_where_the_class_struggled(demo, assignment):
    out, rows = demo
    page = (out / "reports" / f"{assignment}.html").read_text()
    assert "data:image/png;base64," in page, "the score histogram is embedded"
    assert f"{len(rows[assignment])} submissions graded" in page
    hardest = page.index("Tests, hardest first")
    assert "test_" in page[hardest:], "each test's failure rate is listed"
    for student in rows[assignment]:
        assert f"{student}.html" in page, f"no link to {student}'s feedback"


def test_class_report_counts_the_named_causes(demo):
    out, _ = demo
    page = (out / "reports" / "self_attention.html").read_text()
    causes = page[page.index("Most common likely causes"):page.index("could not be graded</h2>")]
    assert "the softmax was taken over the wrong axis" in causes
    assert "not divided by sqrt(d)" in causes
