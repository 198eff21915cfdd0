"""The site in a browser with no network: its math renders, and worked answers open on a click.

Every page is served from loopback and opened in headless chromium where any other request is
aborted (conftest.py's `offline_page`). MathJax comes with the site (book/_config.yml), so each
page must typeset every formula (one MathJax element per `math` span Sphinx wrote), leave no raw
TeX delimiter in the prose, and ask for nothing outside the site.

A small book built here with the course's configuration, one exercise in it, checks the worked
answer's toggle in the browser whatever the lectures hold; on the real site the same is checked
for every worked answer of a lecture page.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from book import build
from grader.course import REPO
from tests.site.books import one_page_book

pytestmark = pytest.mark.slow

LECTURES = sorted((REPO / "lectures").glob("*.ipynb"))
ASSIGNMENTS = sorted(p.parent.name for p in (REPO / "assignments").glob("*/*.ipynb"))
PAGES = ([f"lectures/{p.stem}.html" for p in LECTURES]
         + [f"solutions/{name}.html" for name in ASSIGNMENTS])

# What MathJax left alone: TeX delimiters in the article's prose (code and outputs excluded).
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\$[^$\s][^$]*\$|\\begin\{")

TYPESET = """async () => {
    await window.MathJax.startup.promise;  // resolves once the first typesetting is done
    const article = document.querySelector("article") || document.body;
    const prose = article.cloneNode(true);
    prose.querySelectorAll("pre, code, script, style, mjx-container, .cell_output, .output")
         .forEach(e => e.remove());
    return {
        math: article.querySelectorAll(".math").length,
        typeset: article.querySelectorAll(".math mjx-container").length,
        text: prose.textContent,
    };
}"""


def check_math(page, traffic) -> dict:
    # MathJax's script is deferred: by the load event it has run, if it could be fetched
    loaded = page.evaluate("() => Boolean(window.MathJax && window.MathJax.startup)")
    assert loaded, f"MathJax did not load; requests aborted: {traffic.blocked[:5]}"
    found = page.evaluate(TYPESET)
    assert found["math"] > 0, "no math on the page?"
    assert found["typeset"] == found["math"], (
        f"{found['typeset']} of {found['math']} formulas typeset")
    raw = RAW_TEX.findall(found["text"])
    assert not raw, f"raw TeX left in the text: {raw[:5]}"
    assert not traffic.blocked, f"the page asked for the network: {traffic.blocked[:5]}"
    assert not traffic.failed and not traffic.not_found, traffic.failed + traffic.not_found
    assert any("/_static/mathjax/" in url for url in traffic.local), "MathJax not from the site"
    return found


def check_toggles(page) -> int:
    """Every worked answer starts hidden behind a toggle labelled as one, and shows its code
    (or, for a written answer, its text) after a click on that toggle. The number of answers."""
    answers = page.locator(".cell.tag_worked-answer")
    for i in range(answers.count()):
        cell = answers.nth(i)
        code = cell.locator(".cell_input pre").first
        assert cell.locator("details").count() == 1, f"worked answer {i + 1} has no toggle"
        assert cell.locator("details").first.get_attribute("open") is None
        assert not code.is_visible(), f"worked answer {i + 1} is shown before its toggle"
        summary = cell.locator("summary").first
        assert build.SHOW_CODE in summary.inner_text(), (
            f"worked answer {i + 1}'s toggle says {summary.inner_text()!r}")
        summary.click()
        assert code.is_visible(), f"worked answer {i + 1} did not open"
    written = page.locator(".admonition.worked-answer")
    for i in range(written.count()):
        box = written.nth(i)
        title = box.locator(".admonition-title").first
        assert build.MODEL_ANSWER in title.inner_text()
        body = box.locator(":scope > :not(.admonition-title)").first
        assert not body.is_visible(), f"model answer {i + 1} is shown before its toggle"
        box.locator("button, .admonition-title").first.click()
        assert body.is_visible(), f"model answer {i + 1} did not open"
    return answers.count() + written.count()


@pytest.fixture(scope="module")
def tiny_site(tmp_path_factory) -> Path:
    """A two-page book with the course's _config.yml: math, and one exercise."""
    md = nbformat.v4.new_markdown_cell
    answer = nbformat.v4.new_code_cell("# Worked answer\nx = 2 + 2\nassert x == 4\nprint(x)")
    answer.metadata["tags"] = ["worked-answer", "hide-cell"]
    answer.metadata["jupyter"] = {"source_hidden": True, "outputs_hidden": True}
    answer.outputs = [nbformat.v4.new_output("stream", name="stdout", text="4\n")]
    nb = nbformat.v4.new_notebook(cells=[
        md("# One exercise\n\nThe weights $\\mathrm{softmax}(s)_j = e^{s_j} / \\sum_k e^{s_k}$."),
        md("**Try it.** What is $2 + 2$?"), answer, nbformat.v4.new_code_cell("y = 1")])
    build.label_worked_answers(nb)  # as `make site` stages a lecture
    return one_page_book(tmp_path_factory.mktemp("tiny-book"), "lecture",
                         "# A tiny book\n\nInline $a^2 + b^2$, and displayed:\n\n"
                         "$$\\sum_j w_j = 1$$\n", nb)


@pytest.fixture(scope="module")
def tiny_solutions(tmp_path_factory) -> Path:
    """A one-page book holding a worked solution as `make site` stages it: a code answer and a
    written answer (nbgrader's solution cells), each to be hidden behind its toggle."""
    solution = {"solution": True, "grade": False, "locked": False, "schema_version": 3}
    code = nbformat.v4.new_code_cell("def double(x):\n    return 2 * x")
    code.metadata["nbgrader"] = {**solution, "grade_id": "double"}
    written = nbformat.v4.new_markdown_cell("Because $e^{-c}$ cancels.\n\n:::{note}\ninner\n:::")
    written.metadata["nbgrader"] = {**solution, "grade": True, "grade_id": "why", "points": 1}
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Worked solution\n\nWrite $f(x) = 2x$."), code,
        nbformat.v4.new_markdown_cell("Why is a shift harmless?"), written])
    assert build.hide_answers(nb) == 2
    return one_page_book(tmp_path_factory.mktemp("tiny-solutions"), "answers",
                         "# Answers\n\nThe weights $w_j$ sum to one.\n", nb)


def test_worked_solutions_start_behind_labelled_toggles(tiny_solutions, serve, offline_page):
    page, traffic = offline_page(serve(tiny_solutions) + "answers.html")
    check_math(page, traffic)
    assert check_toggles(page) == 2
    assert page.locator(".cell.tag_worked-answer").count() == 1
    assert page.locator(".admonition.worked-answer").count() == 1


def test_a_worked_answer_is_behind_a_toggle_offline(tiny_site, serve, offline_page):
    page, traffic = offline_page(serve(tiny_site) + "lecture.html")
    check_math(page, traffic)
    assert check_toggles(page) == 1
    page, traffic = offline_page(serve(tiny_site) + "index.html")
    assert check_math(page, traffic)["math"] == 2  # one inline, one displayed


@pytest.mark.parametrize("path", PAGES, ids=[Path(p).stem for p in PAGES])
def test_site_pages_render_offline(site, serve, offline_page, path):
    assert (site / path).exists(), f"no page {path} (is it in book/_toc.yml?)"
    page, traffic = offline_page(serve(site) + path)
    check_math(page, traffic)
    check_toggles(page)  # test_site.py checks their number against the notebooks
