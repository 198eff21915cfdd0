"""toolkit.explorer's fragment in a browser: opened from disk, no network, hostile tokens.

A page of two explorers (the bare fragments, one after the other, as a reader might save a
notebook output) is opened as a file:// URL in headless chromium (conftest.py's `browser`: no
host resolves). Hovering, clicking (a tap) or focusing a query token must shade every head's
key cells with that query's row of weights, and show each weight on hover or focus; the two
explorers must not touch each other; a token that is HTML must stay text: no element made from
it, no dialog, and no request leaves the page. The same two, as a notebook's outputs in a
small book built with the course's configuration, work on the site's page (myst-nb writes
text/html outputs into the page as they are).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

from lectures.toolkit.explorer import attention_explorer
from tests.site.books import one_page_book

pytestmark = pytest.mark.slow

HOSTILE = ["</script><img src=x onerror=alert(1)>", "<b>bold</b>", "a`b${1}", "'\"&amp;",
           "line\nbreak", "  ", "x\u2028y", ""]
SHOWN = ["</script><img\u00b7src=x\u00b7onerror=alert(1)>", "<b>bold</b>", "a`b${1}", "'\"&amp;",
         "line\u21b5break", "\u00b7\u00b7", "x\u21b5y", "\u2205"]
WORDS = ["the", " cat", " sat", " on", " the", " mat", "."]

# every head's key cells of one explorer: their weight (data-w) and their shade, the alpha of
# the background chromium paints ("rgba(r, g, b, a)", or "rgb(r, g, b)" when a is 1)
CELLS = """root => Array.from(root.querySelectorAll(".ax-head")).map(row =>
    Array.from(row.querySelectorAll(".ax-k")).map(c => {
        const rgba = getComputedStyle(c).backgroundColor.match(/[\\d.]+/g).map(Number);
        return [c.getAttribute("data-w"), rgba.length === 4 ? rgba[3] : 1];
    }))"""


def causal_weights(n_head: int, n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(n_head, n, n, generator=g) * 2
    scores = scores.masked_fill(torch.ones(n, n).triu(1).bool(), float("-inf"))
    return torch.softmax(scores, dim=-1)


def expected(w: torch.Tensor, q: int) -> list[list[str]]:
    """The weights each head's row (and the mean's) should show for query q, as the page
    writes them."""
    rows = list(w.double().numpy())
    if len(rows) > 1:
        rows.append(w.double().mean(0).numpy())
    return [[f"{m / 1000:.3f}" for m in np.rint(r[q] * 1000).astype(int)] for r in rows]


@pytest.fixture(scope="module")
def explorers():
    w_words = causal_weights(3, len(WORDS), seed=0)
    w_hostile = causal_weights(2, len(HOSTILE), seed=1)
    return [
        (attention_explorer(WORDS, WORDS, w_words, title="A tiny language model"), w_words),
        (attention_explorer(HOSTILE, HOSTILE, w_hostile, title="<i>Hostile</i> tokens",
                            head_names=["<img src=y onerror=alert(2)>", "second"]), w_hostile),
    ]


@pytest.fixture
def opened(browser, explorers, tmp_path):
    """The page of both explorers from disk: (page, roots, events), with every request, dialog
    and script error recorded."""
    path = tmp_path / "explorers.html"
    path.write_text("".join(x.html for x, _ in explorers), encoding="ascii")
    url = path.as_uri()
    events = {"requests": [], "dialogs": [], "errors": [], "blocked": []}
    page = browser.new_page()

    def route(r):
        if r.request.url == url:
            r.continue_()
        else:
            events["blocked"].append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("request", lambda req: events["requests"].append(req.url))
    page.on("pageerror", lambda e: events["errors"].append(str(e)))

    def dialog(d):
        events["dialogs"].append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    page.goto(url, wait_until="load")
    roots = [page.locator(f"#{x.uid}") for x, _ in explorers]
    yield page, roots, events
    assert not events["errors"], events["errors"]
    assert not events["dialogs"], f"a token ran as script: {events['dialogs']}"
    assert events["requests"] == [url] and not events["blocked"], events
    page.close()


def shows(root, w, q: int):
    assert root.get_attribute("data-query") == str(q)
    cells = root.evaluate(CELLS)
    want = expected(w, q)
    assert [[v for v, _ in row] for row in cells] == want, f"query {q}"
    for row, want_row in zip(cells, want, strict=True):
        for (_, alpha), v in zip(row, want_row, strict=True):
            # colours keep 8 bits of alpha: 1/255, and chromium prints 2 or 3 decimals
            assert alpha == pytest.approx(float(v), abs=6e-3), (row, want_row)
    assert root.locator(".ax-q.ax-sel").count() == 1
    assert root.locator(".ax-q").nth(q).get_attribute("aria-pressed") == "true"


def test_hovering_a_query_shades_each_heads_keys_with_its_row(opened, explorers):
    page, roots, _ = opened
    (_, w0), (_, w1) = explorers
    shows(roots[0], w0, len(WORDS) - 1)  # the last query starts selected
    shows(roots[1], w1, len(HOSTILE) - 1)
    assert roots[0].locator(".ax-head").count() == 4  # 3 heads and their mean
    assert roots[0].locator(".ax-mean .ax-lab").inner_text() == "mean over heads"
    roots[0].locator(".ax-q").nth(2).hover()
    shows(roots[0], w0, 2)
    shows(roots[1], w1, len(HOSTILE) - 1)  # the other explorer did not move
    roots[0].locator(".ax-q").nth(5).hover()
    shows(roots[0], w0, 5)
    assert expected(w0, 5) != expected(w0, 2)
    roots[1].locator(".ax-q").nth(3).click()  # a tap on a touch screen is a click
    shows(roots[1], w1, 3)
    shows(roots[0], w0, 5)
    # a key's weight as a number, on hover
    roots[0].locator(".ax-head").nth(1).locator(".ax-k").nth(4).hover()
    out = roots[0].locator(".ax-out").inner_text()
    assert f"weight {expected(w0, 5)[1][4]}" in out and "key 4" in out and "query 5" in out


def test_the_keyboard_reaches_queries_and_keys(opened, explorers):
    page, roots, _ = opened
    (_, w0), _ = explorers
    roots[0].locator(".ax-q").nth(0).focus()
    shows(roots[0], w0, 0)
    page.keyboard.press("ArrowRight")
    shows(roots[0], w0, 1)
    page.keyboard.press("End")
    shows(roots[0], w0, len(WORDS) - 1)
    page.keyboard.press("ArrowLeft")
    shows(roots[0], w0, len(WORDS) - 2)
    q = len(WORDS) - 2
    focused = "() => document.activeElement.className"
    assert "ax-q" in page.evaluate(focused)
    page.keyboard.press("Tab")  # one tab stop for the queries, one for the keys
    assert "ax-k" in page.evaluate(focused)
    assert f"weight {expected(w0, q)[0][0]}" in roots[0].locator(".ax-out").inner_text()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    out = roots[0].locator(".ax-out").inner_text()
    assert out.startswith("head 1:") and f"key 2 \u201c{WORDS[2].replace(' ', chr(183))}" in out
    assert f"weight {expected(w0, q)[1][2]}" in out
    page.keyboard.press("Tab")  # on to the next explorer's queries: a separate widget
    assert page.evaluate("() => document.activeElement.closest('.attn-x').id") == roots[1] \
        .get_attribute("id")


def test_hostile_tokens_stay_text(opened):
    page, roots, _ = opened
    assert page.locator("img, b, i").count() == 0, "a token or title became HTML"
    root = roots[1]
    assert root.locator(".ax-q").all_text_contents() == SHOWN
    assert root.locator(".ax-head").first.locator(".ax-k").all_text_contents() == SHOWN
    assert root.locator(".ax-lab").all_text_contents()[1:] == [
        "<img src=y onerror=alert(2)>", "second", "mean over heads"]
    assert root.locator(".ax-title").inner_text() == "<i>Hostile</i> tokens"
    for i in range(len(HOSTILE)):
        root.locator(".ax-q").nth(i).hover()
    root.locator(".ax-k").first.hover()
    out = root.locator(".ax-out").inner_text()
    assert re.search(r"\u201c</script><img\u00b7src=x\u00b7onerror=alert\(1\)>\u201d", out), out
    assert page.evaluate("() => document.querySelectorAll('script').length") == 4


@pytest.fixture(scope="module")
def tiny_book(explorers, tmp_path_factory) -> Path:
    """A one-page book with the course's _config.yml: a lecture whose two cells' outputs are
    the explorers (an execute_result and a display_data, as a notebook run writes them)."""
    cells = [nbformat.v4.new_markdown_cell("# Two explorers\n\nRows of $w$.")]
    for i, (x, _) in enumerate(explorers):
        data = {"text/html": x.html, "text/plain": repr(x)}
        out = (nbformat.v4.new_output("execute_result", data=data, execution_count=i + 1) if i == 0
               else nbformat.v4.new_output("display_data", data=data))
        cells.append(nbformat.v4.new_code_cell("attention_explorer(...)", outputs=[out]))
    return one_page_book(tmp_path_factory.mktemp("explorer-book"), "lecture",
                         "# Explorers\n\nThe weights $w_j$ sum to one.\n",
                         nbformat.v4.new_notebook(cells=cells))


def test_explorers_work_on_a_site_page(tiny_book, serve, offline_page, explorers):
    page, traffic = offline_page(serve(tiny_book) + "lecture.html")
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    (_, w0), (_, w1) = explorers
    roots = [page.locator(f"article #{x.uid}") for x, _ in explorers]
    shows(roots[0], w0, len(WORDS) - 1)
    shows(roots[1], w1, len(HOSTILE) - 1)
    roots[0].locator(".ax-q").nth(3).hover()
    shows(roots[0], w0, 3)
    roots[1].locator(".ax-q").nth(0).hover()
    shows(roots[1], w1, 0)
    shows(roots[0], w0, 3)
    assert roots[1].locator(".ax-q").all_text_contents() == SHOWN
    assert page.locator("article img").count() == 0 and not dialogs
    assert not traffic.blocked and not traffic.failed, traffic
