"""Student text rendered as HTML: hostile markdown, stored outputs and printed text through
`python -m grader autograde`, `feedback` and `report`, with honest controls graded after the
attackers in the same batch; then every page built from the batch opened in chromium (the
feedback pages, the class report, the formgrader's submission view on `grader lab`'s server,
a file of the submission that the formgrader serves). Asserted on each: no script ran (no
payload's flag, dialog, console line or request), the policy is there, and the controls' full
marks and ordinary markdown (a heading, a table, math as MathML) still show.

Each payload, if it ran, would set `top.__pwned` (or ask for a pwned.invalid URL); each is
named, so a failure says which vector got through. A last test takes the sanitizer away: a
script written straight into a generated page must still not run (the policy alone)."""

from __future__ import annotations

import base64
import os
import shutil
import urllib.request
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_output

from grader.course import REPO
from grader.html_safety import STATIC_PAGE_POLICY
from tests.support.chromium import CHROMIUM
from tests.support.classes import released_class
from tests.support.lab import running_lab

from .attacks import FULL, Attack, build

pytestmark = [pytest.mark.slow, pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no chromium at {CHROMIUM}")]

PWNED_HOST = "pwned.invalid"


def js(name: str) -> str:
    """The payload: marks `top.__pwned` with the vector's name (no parentheses, spaces or
    double quotes, so it fits in attributes, markdown links and javascript: URLs; it ends in
    undefined, so that as a javascript: URL it leaves the page in place)."""
    return f"top.__pwned=[top.__pwned,'{name}']+'';void+0"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# Every vector we can name, each in its own paragraph of a markdown cell.
MARKDOWN_VECTORS = {
    "script": f"<script>{js('script')}</script>",
    "img_onerror": f'<img src=x onerror="{js("img_onerror")}">',
    "svg_onload": f'<svg onload="{js("svg_onload")}"></svg>',
    "svg_script": f"<svg><script>{js('svg_script')}</script></svg>",
    "svg_animate": f'<svg><animate onbegin="{js("svg_animate")}" attributeName=x dur=1s>',
    "javascript_link": f'<a id=jslink href="javascript:{js("javascript_link")}">click me</a>',
    "iframe_srcdoc": f'<iframe srcdoc="&lt;script&gt;{js("iframe_srcdoc")}&lt;/script&gt;">'
                     "</iframe>",
    "iframe_src": f'<iframe src="javascript:{js("iframe_src")}"></iframe>',
    "object_data": f'<object data="data:text/html;base64,'
                   f'{b64("<script>" + js("object_data") + "</script>")}"></object>',
    "embed": f'<embed src="data:text/html;base64,{b64("<script>parent.__pwned=1</script>")}">',
    "meta_refresh": f'<meta http-equiv="refresh" content="0;url=javascript:{js("meta")}">',
    "base_href": f'<base href="http://{PWNED_HOST}/"><a id=baselink href="page">base</a>',
    "style_url": f'<div style="background:url(http://{PWNED_HOST}/style.png)">styled</div>',
    "style_expression": f'<div style="width:expression({js("expression")})">x</div>',
    "style_element": f"<style>@import 'http://{PWNED_HOST}/x.css';</style>",
    "link_stylesheet": f'<link rel=stylesheet href="http://{PWNED_HOST}/y.css">',
    "tracker_image": f'<img src="http://{PWNED_HOST}/track.png">',
    "form_action": f'<form action="javascript:{js("form")}"><button id=formbutton>go</button>'
                   "</form>",
    "math_wrapped": f'$<img src=x onerror="{js("math_inline")}">$ and '
                    f'$$</math><img src=x onerror="{js("math_block")}">$$',
    "markdown_link": f"[md link](javascript:{js('markdown_link')})",
    "markdown_image": f"![md image](javascript:{js('markdown_image')})",
    "markdown_mixed_case": f"[mixed](JaVaScRiPt:{js('mixed_case')})",
    "markdown_data_link": f"[data](data:text/html;base64,{b64('<script>alert(1)</script>')})",
    "entity_href": f'<a href="&#106;avascript:{js("entity")}">entity</a>',
    "tab_href": f'<a href="jav&#x09;ascript:{js("tab")}">tab</a>',
    "upper_case": f'<IMG SRC=x OnErRoR="{js("upper_case")}">',
    "unclosed": f'<img src=x onerror="{js("unclosed")}" ',
    "details_toggle": f'<details open ontoggle="{js("details")}"><summary>s</summary></details>',
    "autofocus": f'<input autofocus onfocus="{js("autofocus")}">',
    "video_source": f'<video><source onerror="{js("video")}"></video>',
    "body_onload": f'<body onload="{js("body")}">',
    "mxss_mglyph": f'<math><mtext><table><mglyph><style><img src=x onerror="{js("mglyph")}">',
    "mxss_noscript": f'<noscript><p title="</noscript><img src=x onerror={js("noscript")}>">',
    "mxss_svg_style": f'<svg></p><style><a id="</style><img src=1 onerror={js("svgstyle")}>">',
    "template": f"<template><script>{js('template')}</script></template>",
    "textarea_breakout": f"<textarea></textarea><script>{js('textarea')}</script>",
    "comment_breakout": f"<!--><script>{js('comment')}</script>-->",
    "heading_id_clash": "# softmax\n\n<h2 id=softmax>clash</h2>",
}

# What student code could display: only printed text and errors reach a graded notebook (the
# sandbox keeps nothing else), and text is escaped; stored outputs are cleared before grading.
PRINTED = f'''
print("<script>{js('printed')}</script>")
print("\\x1b[31m<img src=x onerror=\\"{js('printed_ansi')}\\">\\x1b[0m")
from IPython.display import HTML, Javascript, display
display(HTML("<script>{js('display_html')}</script>"))
display(Javascript("{js('display_js')}"))
raise ValueError("<img src=x onerror=\\"{js('evalue')}\\">")
'''

# Rich outputs as a notebook may store them: rendered through the same exporter settings (the
# grading pipeline never lets them through, so this is tested on the exporter directly).
RICH_OUTPUTS = [
    new_output("display_data", data={"text/html": f"<script>{js('html_output')}</script>"
                                                  f'<img src=x onerror="{js("html_img")}">'}),
    new_output("display_data", data={"application/javascript": js("javascript_output")}),
    new_output("display_data", data={"image/svg+xml": '<svg xmlns="http://www.w3.org/2000/svg" '
                                     f'onload="{js("svg_output")}"><script>'
                                     f"{js('svg_script_output')}</script></svg>"}),
    new_output("display_data", data={"text/markdown": f'<img src=x onerror="{js("md_out")}">'}),
    new_output("display_data", data={
        "application/vnd.jupyter.widget-view+json": {"model_id": "x", "version_major": 2,
                                                     "version_minor": 0},
        "text/plain": "a widget"}),
    new_output("display_data", data={"text/latex": f'$<img src=x onerror="{js("latex")}">$'}),
    new_output("display_data", data={"text/html": f"<b>isolated</b><script>{js('iso')}"
                                                  "</script>"},
               metadata={"text/html": {"isolated": True}}),
]

HONEST_MARKDOWN = """# Honest heading

| key | weight |
|-----|--------|
| a   | 0.25   |

The weights are $\\operatorname{softmax}(q k^\\top / \\sqrt{d})$, and

$$\\sum_j w_j = 1$$
"""


def _with_markdown(cells: list[str], answers: str | None = None):
    def tamper(nb):
        if answers is not None:  # the written answers (markdown solution cells) too
            for cell in nb.cells:
                meta = cell.metadata.get("nbgrader", {})
                if cell.cell_type == "markdown" and meta.get("solution"):
                    cell.source = answers
        nb.cells[1:1] = [new_markdown_cell(text) for text in cells]
    return tamper


def _stored_outputs(nb):
    cell = new_code_cell("1")
    cell.outputs = RICH_OUTPUTS
    nb.cells.insert(1, cell)


VECTORS = "\n\n".join(MARKDOWN_VECTORS.values())
# Attackers first (names sort first: the batch grades them first), honest controls last.
SUITE = [
    Attack("a1_markdown", "every HTML vector in markdown cells and written answers",
           tamper=_with_markdown(list(MARKDOWN_VECTORS.values()), answers=VECTORS)),
    Attack("a2_printed", "HTML printed, displayed and raised by the student's code",
           code=PRINTED),
    Attack("a3_stored_outputs", "hostile rich outputs saved in the notebook",
           tamper=_stored_outputs),
    Attack("a4_correct_and_hostile", "correct answers around every markdown vector",
           answers="correct", tamper=_with_markdown([VECTORS]), points=FULL),
    Attack("z1_honest", "the source solution with ordinary markdown", answers="correct",
           tamper=_with_markdown([HONEST_MARKDOWN]), points=FULL),
    Attack("z2_honest", "the source solution, nothing else", answers="correct", points=FULL),
]
EVIL_FILE = "notes.html"  # a file beside the notebook, which the formgrader serves


def _ok(run):
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run


@pytest.fixture(scope="module")
def batch():
    # below the repository: the formgrader only serves a course below its server's root
    work = REPO / "build" / f"html-attacks-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    mine = released_class(work, "soft_select")
    course = mine.course
    for attack in SUITE:
        build(attack, mine.released, mine.folder(attack.name))
    (mine.folder("a1_markdown") / EVIL_FILE).write_text(
        f"<script>{js('submission_file')}</script>")
    _ok(mine.autograde("--cell-timeout", "30", "--memory", "2G", timeout=900))
    _ok(mine.feedback(work / "feedback", timeout=900))
    _ok(mine.cli("report", "soft_select", "--to", str(work / "report.html"), "--feedback",
                 str(work / "feedback"), timeout=900))
    yield {"course": course, "work": work, "status": mine.status()}
    shutil.rmtree(work, ignore_errors=True)


class Watched:
    """A page with every sign of a payload recorded: dialogs, console lines, requests to the
    payloads' host, and after loading (and clicking what a reader would click) the flag."""

    def __init__(self, context):
        self.page = context.new_page()
        self.dialogs, self.console, self.requests = [], [], []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("console", lambda m: self.console.append(m.text))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def open(self, url: str):
        self.page.goto(url)
        self.page.wait_for_load_state("load")
        for selector in ("#user-content-jslink", "a:has-text('click me')", "#formbutton",
                         "a:has-text('md link')", "a:has-text('mixed')", "a:has-text('tab')",
                         "a:has-text('entity')"):
            for link in self.page.locator(selector).all()[:3]:
                try:
                    link.click(timeout=2000, no_wait_after=True)
                except Exception:  # noqa: BLE001 - a link the sanitizer emptied: nothing to do
                    pass
        self.page.wait_for_timeout(500)
        return self

    def assert_nothing_ran(self, what: str):
        flag = self.page.evaluate("() => top.__pwned || null") if not self.page.is_closed() \
            else None
        pwned = [u for u in self.requests if PWNED_HOST in u]
        assert not flag, f"{what}: a payload ran: {flag}"
        assert not self.dialogs, f"{what}: a dialog opened: {self.dialogs}"
        assert not pwned, f"{what}: a payload reached the network: {pwned}"
        assert not [c for c in self.console if "pwned" in c.lower()], self.console

    def close(self):
        self.page.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _page(batch, student: str) -> Path:
    return batch["work"] / "feedback" / f"{student}.html"


def test_the_watch_sees_a_payload_that_runs(browser, tmp_path):
    """The harness can fail: the vectors on a page with neither sanitizer nor policy run."""
    page = tmp_path / "bare.html"
    page.write_text("<!doctype html><html><body>" + "\n".join(MARKDOWN_VECTORS.values()))
    with Watched(browser).open(page.as_uri()) as watched:
        with pytest.raises(AssertionError, match="a payload ran"):
            watched.assert_nothing_ran("a bare page")
        ran = set(watched.page.evaluate("() => top.__pwned").split(","))
        # parsed, on an event, and clicked (a form, javascript: links): each kind is seen
        assert {"script", "img_onerror", "svg_onload", "form", "entity", "tab"} <= ran, ran


def test_the_batch_was_graded(batch):
    status = batch["status"]
    assert set(status) == {a.name for a in SUITE}
    for attack in SUITE:
        row = status[attack.name]
        assert row["error"] is None, f"{attack.name}: {row['error']}"
        assert row["auto_score"] == attack.points, f"{attack.name}: {row['auto_score']}"


@pytest.mark.parametrize("student", [a.name for a in SUITE])
def test_feedback_page_runs_nothing(batch, browser, student):
    page = _page(batch, student)
    text = page.read_text()
    assert text.index('http-equiv="Content-Security-Policy"') < text.index("<meta charset")
    assert STATIC_PAGE_POLICY in text
    with Watched(browser).open(page.as_uri()) as watched:
        watched.assert_nothing_ran(f"feedback page of {student}")


def test_honest_feedback_still_shows_marks_and_markdown(batch, browser):
    with Watched(browser).open(_page(batch, "z1_honest").as_uri()) as watched:
        page = watched.page
        # full autograded marks (the written answers are graded by hand, later)
        assert f"(Score: {FULL:.1f} / " in page.locator("h4").first.inner_text()
        assert page.locator("h1", has_text="Honest heading").count() == 1
        assert page.locator("table td", has_text="0.25").count() == 1
        math = page.locator("math")
        assert math.count() >= 2, "math is not MathML"
        # chromium lays MathML out (a block formula has height); TeX source is not shown
        assert page.locator("math[display=block]").first.bounding_box()["height"] > 10
        assert "\\sqrt" not in page.locator("body").inner_text()
        watched.assert_nothing_ran("honest feedback page")
        # the page asks for no script its policy refuses (MathJax is gone). (Bootstrap's CSS,
        # inlined, names icon fonts beside the page that no feedback folder has: refused.)
        refused = [c for c in watched.console if "Content Security Policy" in c]
        assert not [c for c in refused if "script" in c.lower()], refused


def test_hostile_markdown_is_shown_as_text_not_markup(batch, browser):
    """What the sanitizer left: no element it forbids, no javascript: URL, ids prefixed."""
    with Watched(browser).open(_page(batch, "a1_markdown").as_uri()) as watched:
        found = watched.page.evaluate("""() => ({
          forbidden: [...document.querySelectorAll(
            'script:not([type]), iframe, object, embed, form, base, meta[http-equiv=refresh],'
            + 'svg, video, input, details[ontoggle], link[rel=stylesheet]')].length,
          handlers: [...document.querySelectorAll('*')].filter(
            e => [...e.attributes].some(a => a.name.startsWith('on'))).length,
          js_urls: [...document.querySelectorAll('[href],[src]')].filter(e =>
            /^\\s*(javascript|data:text)/i.test(e.getAttribute('href') || e.getAttribute('src')))
            .length,
          clash: document.querySelectorAll('#softmax').length,
        })""")
        assert found == {"forbidden": 0, "handlers": 0, "js_urls": 0, "clash": 0}, found


def test_report_runs_nothing(batch, browser):
    report = batch["work"] / "report.html"
    assert STATIC_PAGE_POLICY in report.read_text()
    with Watched(browser).open(report.as_uri()) as watched:
        watched.assert_nothing_ran("class report")
        rows = watched.page.locator("tr", has_text="z1_honest")
        assert f"{FULL} / {FULL}" in rows.last.inner_text()


def test_rich_outputs_are_dropped_or_cleaned_by_the_exporter(batch, browser, tmp_path):
    """The stored outputs a grading run clears, rendered anyway through the feedback pages'
    exporter settings: nothing of them runs."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.converters import GenerateFeedback

    from grader.nbgrader.config import nbgrader_config

    nb = nbformat.read(batch["course"].autograded / "z2_honest" / "soft_select" /
                       "soft_select.ipynb", as_version=4)
    _stored_outputs(nb)
    for cell in nb.cells:  # what nbgrader's GetGrades adds for the template
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.metadata.nbgrader["score"] = 0
    converter = GenerateFeedback(coursedir=None, config=nbgrader_config(batch["course"]))
    exporter = HTMLExporter(parent=converter, config=converter.config)
    html, _ = exporter.from_notebook_node(nb, resources={"nbgrader": {
        "notebook": "soft_select", "score": 0, "max_score": 1, "late_penalty": 0}})
    page = tmp_path / "rich.html"
    page.write_text(html)
    assert "<script type=\"text/javascript\">" not in html  # JavaScript output dropped
    with Watched(browser).open(page.as_uri()) as watched:
        watched.assert_nothing_ran("rich outputs")


def test_policy_alone_stops_a_script_in_a_page(batch, browser, tmp_path):
    """The second wall: a script put straight into a generated page (as if the sanitizer had
    missed it) does not run."""
    text = _page(batch, "z2_honest").read_text()
    injected = tmp_path / "injected.html"
    injected.write_text(text.replace("<body>", f"<body><script>{js('inline')}</script>"
                                     f'<img src=x onerror="{js("handler")}">', 1))
    with Watched(browser).open(injected.as_uri()) as watched:
        watched.assert_nothing_ran("a script injected after sanitizing")
        assert any("Content Security Policy" in c for c in watched.console), watched.console


# ----- the formgrader, on `grader lab`'s server ------------------------------------------------

@pytest.fixture(scope="module")
def formgrader(batch, tmp_path_factory):
    """`grader lab` (grader.servers.lab, as `make lab` starts it) on the batch's course, on
    loopback,
    without a token."""
    with running_lab(batch["course"].root, tmp_path_factory.mktemp("lab")) as url:
        yield url


def _submission_url(batch, formgrader, student: str) -> str:
    with batch["course"].gradebook() as gb:
        sid = gb.find_submission_notebook("soft_select", "soft_select", student).id
    return f"{formgrader}/formgrader/submissions/{sid}/"


@pytest.mark.parametrize("student", ["a1_markdown", "a4_correct_and_hostile"])
def test_formgrader_submission_view_runs_nothing_of_the_student(batch, browser, formgrader,
                                                                 student):
    url = _submission_url(batch, formgrader, student)
    with urllib.request.urlopen(url) as response:
        policy = response.headers["Content-Security-Policy"]
    assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0], policy
    with Watched(browser).open(url) as watched:
        watched.assert_nothing_ran(f"the formgrader's view of {student}")
        # nbgrader's own page still works under the policy: its grading form is live
        page = watched.page
        page.wait_for_function("() => typeof formgrader !== 'undefined'")
        assert page.locator("input.score").count() > 0
        refused = [c for c in watched.console if "Content Security Policy" in c]
        assert not [c for c in refused if "formgrader/static" in c], refused


def test_formgrader_honest_submission_shows_math_and_table(batch, browser, formgrader):
    with Watched(browser).open(_submission_url(batch, formgrader, "z1_honest")) as watched:
        page = watched.page
        assert page.locator("h1", has_text="Honest heading").count() == 1
        assert page.locator("math").count() >= 2
        assert page.locator("table td", has_text="0.25").count() == 1
        watched.assert_nothing_ran("the formgrader's view of an honest submission")
        assert not [c for c in watched.console if "Content Security Policy" in c], \
            watched.console
        # nbgrader's grading form still saves under the policy (its API: connect-src 'self')
        score = page.locator("input.score").first
        with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url and
                                  r.request.method == "PUT") as saved:
            score.fill("1")
            score.press("Tab")
        assert saved.value.ok, saved.value.status


def test_a_file_of_the_submission_is_served_sandboxed(batch, browser, formgrader):
    url = _submission_url(batch, formgrader, "a1_markdown") + EVIL_FILE
    with Watched(browser) as watched:
        response = watched.page.goto(url)
        if response.status == 404:
            pytest.skip(f"{EVIL_FILE} was not carried into the autograded folder")
        assert "sandbox" in response.headers["content-security-policy"]
        watched.page.wait_for_timeout(500)
        watched.assert_nothing_ran("a submission's HTML file opened from the formgrader")


def test_jupyterlab_still_loads_beside_the_formgrader_policy(batch, browser, formgrader):
    page = browser.new_page()
    try:
        page.goto(f"{formgrader}/lab")
        page.wait_for_selector("#jp-main-statusbar")
    finally:
        page.close()
