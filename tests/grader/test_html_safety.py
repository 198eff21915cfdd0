"""The sanitizer and the policies of grader/html_safety.py and grader/servers/formgrader_policy.py,
on
their own (fast; tests/adversarial/test_html_attacks.py opens the real pages in chromium)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from types import SimpleNamespace

import pytest

from grader.html_safety import clean_html, markdown_to_html
from grader.servers.formgrader_policy import SUBMISSION_FILE_POLICY, FormgraderPolicy


@pytest.mark.parametrize("hostile", [
    "<script>x()</script>",
    "<img src=x onerror=x()>",
    "<IMG SRC=x OnErRoR=x()>",
    "<svg onload=x()></svg>",
    '<a href="javascript:x()">a</a>',
    '<a href="jav&#x09;ascript:x()">a</a>',
    '<a href="&#106;avascript:x()">a</a>',
    '<a href="data:text/html;base64,PHNjcmlwdD4=">a</a>',
    '<iframe srcdoc="&lt;script&gt;x()&lt;/script&gt;"></iframe>',
    '<object data="x.swf"></object><embed src="x">',
    '<meta http-equiv="refresh" content="0;url=javascript:x()">',
    '<base href="http://evil.invalid/">',
    '<form action="http://evil.invalid/"><button>b</button></form>',
    "<style>body{display:none}</style>",
    '<img src="http://evil.invalid/track.png">',
    '<math><mtext><table><mglyph><style><img src=x onerror=x()>',
    '<noscript><p title="</noscript><img src=x onerror=x()>">',
])
def test_nothing_that_runs_or_loads_survives(hostile):
    for html in (clean_html(hostile), markdown_to_html(hostile)):
        for tag, attrs in _elements(html):
            assert tag not in FORBIDDEN, html
            for name, value in attrs:
                assert not name.startswith("on"), html
                if name in ("href", "src"):
                    assert not re.match(r"\s*(javascript|data:text)", value, re.I), html
                    assert "evil.invalid" not in value, html


FORBIDDEN = {"script", "iframe", "object", "embed", "meta", "base", "form", "style", "svg",
             "math", "link", "noscript"}


def _elements(html: str) -> list[tuple[str, list]]:
    """(tag, attributes) of each element, as an HTML parser reads the page."""
    found = []

    class Reader(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, attrs))

    Reader().feed(html)
    return found


def test_markdown_links_and_images_keep_what_is_safe():
    html = markdown_to_html("[site](https://example.org) [mail](mailto:a@b.c) "
                            "[bad](javascript:x) ![img](data:image/png;base64,AAAA) "
                            "![rel](figure.png) ![far](http://example.org/t.png)")
    assert 'href="https://example.org"' in html and 'href="mailto:a@b.c"' in html
    assert 'src="data:image/png;base64,AAAA"' in html and 'src="figure.png"' in html
    assert "example.org/t.png" not in html  # an image from elsewhere: a tracker
    assert "<a>bad</a>" in html


def test_math_becomes_mathml_and_markdown_stays():
    html = markdown_to_html("# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
                            "$\\frac{1}{\\sqrt{d}}$ and\n\n$$x_1, \\dots, x_n$$\n\n"
                            "$\\unknowncommand{x}$")
    assert '<h1 id="user-content-Title">' in html and "<td>1</td>" in html
    assert html.count("<math") == 2 and "<mfrac>" in html and 'display="block"' in html
    assert "$\\unknowncommand{x}$" in html  # TeX the converter cannot read stays as text


def test_math_cannot_carry_markup():
    html = markdown_to_html('$<img src=x onerror=x()>$ $\\text{<script>x()</script>}$')
    assert "<img" not in html and "<script" not in html, html


def test_ids_and_classes_cannot_take_the_pages_own():
    html = clean_html('<h2 id="softmax">h</h2><a href="#softmax">to</a>'
                      '<div class="navbar-fixed-top modal k">x</div><span class="mi">y</span>')
    assert 'id="user-content-softmax"' in html and 'href="#user-content-softmax"' in html
    assert "navbar" not in html and "modal" not in html
    assert '<span class="mi">' in html


def test_styles_keep_colour_not_position_or_urls():
    html = clean_html('<span style="color:red;position:fixed;background:url(http://e.invalid)">'
                      "s</span>")
    assert "color:red" in html and "position" not in html and "e.invalid" not in html


def _policy_for(path: str, base_url: str = "/"):
    request = SimpleNamespace(path=path, protocol="http", host="127.0.0.1:8888")
    return FormgraderPolicy(request, base_url=base_url).policy()


def test_formgrader_policy_only_on_submission_pages():
    page = _policy_for("/user/prof/formgrader/submissions/abc123/", "/user/prof/")
    script_src = page.split("script-src ")[1].split(";")[0].split()
    assert script_src[0] == "http://127.0.0.1:8888/user/prof/formgrader/static/"
    assert all(s.startswith("'sha256-") for s in script_src[1:]) and len(script_src) == 2
    assert _policy_for("/formgrader/submissions/abc123/notes.html") == SUBMISSION_FILE_POLICY
    assert "sandbox" in SUBMISSION_FILE_POLICY
    assert _policy_for("/formgrader/submissions/abc123/next") is None  # a redirect
    assert _policy_for("/lab") is None and _policy_for("/formgrader/gradebook") is None


def test_validate_shows_a_failing_cell_escaped():
    """nbgrader's Validate dialog puts the failed cell's error into the page as HTML
    (innerHTML): what its validator hands over must be escaped text."""
    from nbconvert.filters import ansi2html
    from nbformat.v4 import new_code_cell, new_output
    from nbgrader.validator import Validator

    hostile = '<img src=x onerror="x()">'
    cell = new_code_cell("raise ValueError()", outputs=[
        new_output("error", ename="ValueError", evalue=hostile,
                   traceback=[f"\x1b[31mValueError\x1b[0m: {hostile}"]),
        new_output("stream", name="stderr", text=hostile)])
    shown = ansi2html(Validator()._extract_error(cell))  # as Validator.validate does
    assert not [tag for tag, _ in _elements(shown) if tag == "img"], shown
    assert "&lt;img" in shown


def test_grader_check_shows_control_characters_as_escapes():
    from grader.selfcheck.run import TestResult, report

    text = report([TestResult("test\x1b]0;owned\x07", 1, False,
                              "wrong\x1b[2K\r  PASS  forged (1 pt)\u202e")], "n.ipynb")
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "\\x1b]0;owned\\x07" in text
    assert "\\r  PASS  forged" in text  # one line: a carriage return cannot start another
