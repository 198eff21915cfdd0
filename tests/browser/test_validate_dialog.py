"""nbgrader's Validate dialog in JupyterLab wraps a long message (issue 49, section 3): the
grader's servers serve a custom.css (grader/servers/lab_style.py) that JupyterLab links into its
page.

JupyterLab is started as `make lab` starts it (grader.servers.lab) on a small soft_select course of
its
own; the notebook validated is an answered release whose answer raises an error with a message
of one 900-character word. Without the rule the message's <pre> is seven times wider than the
dialog (measured: 7299 px in 919).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import nbformat
import pytest

from grader.course import REPO
from grader.demo.sample_class import Edit, Student, make_submission
from tests.browser.conftest import LAB_SETTINGS, WORK
from tests.support.lab import running_lab

SOURCE = REPO / "assignments" / "soft_select" / "soft_select.ipynb"
LONG = "unbroken_words_" * 60
DAN = Student("dan", "raises an error with a long message", "partial", edits=[
    Edit("soft_select", "    scores = ", f"    raise ValueError('{LONG}')\n    scores = ")])


@pytest.fixture(scope="module")
def validate_lab(tmp_path_factory):
    """(url, the notebook's path below the repository) of a JupyterLab started by
    grader.servers.lab."""
    from grader.course import Course
    from grader.nbgrader.release import release

    WORK.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="validate-", dir=WORK))  # below the server's root
    course = Course(root / "course", source=REPO / "assignments")
    released = release(course, "soft_select") / "soft_select.ipynb"
    (root / "work").mkdir()
    nbformat.write(make_submission(SOURCE, released, DAN), root / "work" / "dan.ipynb")

    try:
        with running_lab(course.root, tmp_path_factory.mktemp("validate-lab"),
                         LAB_SETTINGS) as url:
            yield url, (root / "work" / "dan.ipynb").relative_to(REPO)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_validate_wraps_a_long_message(validate_lab, page):
    url, notebook = validate_lab
    page.goto(f"{url}/lab/tree/{notebook}")
    css = page.context.request.get(f"{url}/custom/custom.css")
    assert css.ok and "#validation-message pre" in css.text()
    assert page.locator("link[href$='custom/custom.css']").count() == 1

    page.locator(".jp-ToolbarButtonComponent:has-text('Validate')").first.click()
    message = page.locator("#validation-message pre", has_text=LONG[:60]).first
    message.wait_for(timeout=300_000)  # the notebook runs first
    sizes = message.evaluate("e => [e.scrollWidth, e.clientWidth, getComputedStyle(e).whiteSpace]")
    assert sizes[2] == "pre-wrap" and sizes[0] <= sizes[1], f"the message is cut off: {sizes}"
    body = page.locator(".jp-Dialog-body").first
    width = body.evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert width[0] <= width[1], f"the dialog scrolls sideways: {width}"
