"""Feedback a student can read (issue 49, section 3), in chromium: each graded cell named as the
notebook describes it, passes and failures told apart by a word and a style, long messages
wrapped to the page, math as MathML (no script, offline), written answers not graded yet said
so; and `feedback --publish` warns the instructor of them, until they are graded.

One small soft_select class, graded through the CLI: alice (the source's answers), carol (a
known mistake) and dan, whose answer raises an error with a long message of unbroken words.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import pytest

from grader.course import Course
from grader.demo.sample_class import Edit, Student
from tests.support import cli
from tests.support.chromium import CHROMIUM
from tests.support.classes import sample_students

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no chromium at {CHROMIUM}")]
LONG = "unbroken_words_" * 60  # one word of 900 characters: nothing to break it at but anywhere
DAN = Student("dan", "raises an error with a long message", "partial", edits=[
    Edit("soft_select", "    scores = ", f"    raise ValueError('{LONG}')\n    scores = ")])


grader = partial(cli.grader, timeout=900)


@pytest.fixture(scope="module")
def graded(own_class) -> Path:
    mine = own_class("feedback", through_cli=True)
    mine.write_class(sample_students("soft_select", "alice", "carol") + [DAN])
    done = mine.autograde(timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    done = mine.feedback(mine.root / "pages", timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return mine.root


@pytest.fixture
def page_of(graded, open_page):
    """`page_of(student, folder)`: their feedback page of `feedback --to FOLDER`, loaded."""
    return lambda student, folder="pages": open_page(graded / folder / f"{student}.html")


def _toc(page) -> dict[str, tuple[str, str]]:
    """{link text: (the state's word, the score text)} of the summary at the top."""
    items = page.locator("#toc li.grader-item")
    found = {}
    for i in range(items.count()):
        item = items.nth(i)
        found[item.locator("a").inner_text()] = (item.locator(".grader-mark").inner_text(),
                                                 item.inner_text())
    return found


def test_tests_are_named_as_the_notebook_describes_them(page_of):
    page = page_of("carol")
    toc = _toc(page)
    assert "Test cell" not in page.locator("#toc").inner_text()
    names = list(toc)
    assert 'Test: a three-entry "dictionary" with one-hot keys' in names, names
    assert "Test: huge and tiny scores must not produce inf or NaN" in names, names
    assert "Hidden test: gradients flow through your softmax" in names, names
    assert any(n.startswith("Written answer: Question 1: Subtracting the row's maximum")
               for n in names), names
    assert "Written answer: Question: The bandwidth is attention pooling's temperature." in names
    assert len(set(names)) == len(names) == 13  # 10 tests and 3 written answers, each its own
    # each link leads to its cell, whose heading carries the same name
    href = page.locator("#toc a", has_text="huge and tiny scores").get_attribute("href")
    heading = page.locator(f"a[name='{href[1:]}'] + .panel-heading")
    assert "huge and tiny scores must not produce inf or NaN" in heading.inner_text()


def test_passes_and_failures_differ_in_word_and_style(page_of):
    page = page_of("carol")  # softmax without the max: the large-scores test fails
    toc = _toc(page)
    passed = toc['Test: a three-entry "dictionary" with one-hot keys']
    failed = toc["Test: huge and tiny scores must not produce inf or NaN"]
    assert "Passed" in passed[0] and "Failed" in failed[0]
    assert "1.0 / 1.0" in passed[1] and "0.0 / 1.0" in failed[1]

    def style(selector):
        return page.locator(selector).first.evaluate(
            "e => { const s = getComputedStyle(e); "
            "return [s.color, s.backgroundColor, s.borderTopColor, s.borderLeftColor]; }")

    assert style("#toc li.grader-passed .grader-mark") != \
        style("#toc li.grader-failed .grader-mark")
    # in the notebook too: the failed test's panel is not styled as the passed one's
    assert style("div.nbgrader_cell.grader-failed > .panel-heading") != \
        style("div.nbgrader_cell.grader-passed > .panel-heading")
    assert style("div.nbgrader_cell.grader-failed") != style("div.nbgrader_cell.grader-passed")


def test_a_long_message_wraps(page_of):
    page = page_of("dan")
    message = page.locator("div.output_error pre, div.output_text pre", has_text=LONG[:60]).first
    assert message.count() == 1
    sizes = message.evaluate(
        "e => [e.scrollWidth, e.clientWidth, e.parentElement.scrollWidth, "
        "e.parentElement.clientWidth, document.documentElement.scrollWidth, "
        "document.documentElement.clientWidth]")
    assert sizes[0] <= sizes[1] and sizes[2] <= sizes[3], f"the message overflows: {sizes}"
    assert sizes[4] <= sizes[5], f"the page scrolls sideways: {sizes}"
    assert message.bounding_box()["height"] > 3 * 20, "a 900-character word on one line?"


def test_math_is_mathml_and_nothing_runs(page_of):
    page = page_of("alice")
    assert page.locator("math").count() >= 5
    assert page.locator("math[display=block]").first.bounding_box()["height"] > 10
    text = page.locator("body").inner_text()
    assert "\\mathrm" not in text and "$$" not in text
    assert page.locator("script").count() == 0


def test_written_answers_not_graded_yet_say_so(page_of):
    page = page_of("alice")
    toc = _toc(page)
    written = {name: v for name, v in toc.items() if name.startswith("Written answer")}
    assert len(written) == 3
    for word, text in written.values():
        assert "Not graded yet" in word and "not graded yet" in text
        assert "0.0 / 2.0" not in text and "0.0 / 3.0" not in text
    assert "not graded yet" in page.locator("#grader-pending").inner_text().lower()
    panel = page.locator("div.nbgrader_cell.grader-ungraded")
    assert panel.count() == 3 and "not graded yet" in panel.first.inner_text()


def test_publish_warns_of_written_answers_until_they_are_graded(graded, page_of):

    course = graded / "course"
    done = grader("--course", str(course), "feedback", "soft_select", "--publish", cwd=graded)
    warning = done.stdout[done.stdout.index("warning: written answers not graded yet"):]
    for student in ("alice", "carol", "dan"):
        assert re.search(rf"^  {student} +soft_select: experiment_bandwidth, soft_select: "
                         "written_stable_softmax, soft_select: written_temperature$", warning,
                         re.M), done.stdout  # (sorted by name)

    with Course.at(course).gradebook() as gb:
        for written in ("written_stable_softmax", "written_temperature", "experiment_bandwidth"):
            gb.find_grade(written, "soft_select", "soft_select", "alice").manual_score = 1.5
        gb.db.commit()
    done = grader("--course", str(course), "feedback", "soft_select", "--publish", "--to",
                  str(graded / "after"), cwd=graded)
    warning = done.stdout[done.stdout.index("warning: written answers not graded yet"):]
    assert not re.search(r"^  alice ", warning, re.M), done.stdout
    assert re.search(r"^  carol +soft_select: experiment_bandwidth, soft_select: "
                     "written_stable_softmax", warning, re.M)

    written = {n: v for n, v in _toc(page_of("alice", "after")).items()
               if n.startswith("Written answer")}
    assert len(written) == 3
    for name, (word, text) in written.items():
        out_of = "3.0" if name.startswith("Written answer: Question: The bandwidth") else "2.0"
        assert "Graded" in word and f"1.5 / {out_of}" in text and "not graded yet" not in text
