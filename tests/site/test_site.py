"""`make site`: every lecture and worked solution is a page, with its figures, and the contents
page maps each lecture to its assignment.

The build (the `site` fixture in conftest.py) executes every source assignment, takes the
lectures executed (with the lecture checks) once this session by tests/conftest.py's
`executed_lectures` from build/lectures/ (as `make site` reuses what `make lectures` wrote),
then runs Jupyter Book with Sphinx warnings as errors: a clean exit is itself part of the test.
What the pages look like in a browser with no network is in test_offline.py.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import nbformat
import pytest

from grader.course import REPO

pytestmark = pytest.mark.slow

EXECUTED = REPO / "build" / "lectures"
LECTURES = sorted((REPO / "lectures").glob("*.ipynb"))
ASSIGNMENTS = sorted(p.parent.name for p in (REPO / "assignments").glob("*/*.ipynb"))


class Page(HTMLParser):
    """The images, links and table rows of one HTML page."""

    def __init__(self, path: Path):
        super().__init__()
        self.images: list[str] = []
        self.links: list[str] = []
        self.rows: list[list[str]] = []  # the links in each table row
        self.title = ""
        self._in_title = False
        self.feed(path.read_text())

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        elif tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
            if self.rows:
                self.rows[-1].append(attrs["href"])
        elif tag == "tr":
            self.rows.append([])
        elif tag == "title":
            self._in_title = True

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def local_target(page: Path, href: str) -> Path | None:
    """The file a relative link or image source points to (None for external and data URIs)."""
    url = urlparse(href)
    if url.scheme or url.netloc or not url.path:
        return None
    return (page.parent / unquote(url.path)).resolve()


def test_the_build_reuses_the_executed_lectures(site, site_build):
    """Executed copies in build/lectures/ newer than their sources are not executed again."""
    for lecture in LECTURES:
        assert f"  {lecture.name}: up to date in build/lectures/" in site_build.stdout, (
            f"{lecture.name} was executed again:\n{site_build.stdout[-3000:]}")


def figures(nb) -> int:
    return sum("image/png" in out.get("data", {}) or "image/svg+xml" in out.get("data", {})
               for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs)


@pytest.mark.parametrize("lecture", LECTURES, ids=[p.stem for p in LECTURES])
def test_every_lecture_is_a_page_with_its_figures(site, lecture):
    page_path = site / "lectures" / f"{lecture.stem}.html"
    assert page_path.exists(), f"no page for {lecture.name}"
    page = Page(page_path)
    heading = nbformat.read(lecture, as_version=4).cells[0].source.splitlines()[0]
    assert heading.lstrip("# ").replace("`", "") in page.title

    expected = figures(nbformat.read(EXECUTED / lecture.name, as_version=4))
    assert expected > 0, f"{lecture.name} draws no figure?"
    shown = []
    for src in page.images:
        if src.startswith("data:image/"):
            shown.append(src)
            continue
        target = local_target(page_path, src)
        if target is not None and target.suffix in {".png", ".svg"}:
            assert target.exists() and target.stat().st_size > 1000, f"{src} is missing or empty"
            shown.append(src)
    assert len(shown) >= expected, (f"{lecture.name} drew {expected} figures; "
                                    f"its page shows {len(shown)}")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_worked_solution_is_a_page(site, assignment):
    page_path = site / "solutions" / f"{assignment}.html"
    assert page_path.exists(), f"no worked solution page for {assignment}"
    text = page_path.read_text()
    assert "BEGIN SOLUTION" in text, "the worked solution should show the reference answers"
    assert "Traceback" not in text, "a worked solution raised while the site was built"


def test_contents_page_maps_lectures_to_assignments(site):
    index = Page(site / "index.html")
    rows = {}
    for links in index.rows:
        lectures = [h for h in links if h.startswith("lectures/")]
        if lectures:
            rows[Path(urlparse(lectures[0]).path).stem] = [
                Path(urlparse(h).path).stem for h in links if h.startswith("solutions/")]
    assert sorted(rows) == [p.stem for p in LECTURES], "every lecture, once, in the contents"
    mapped = sorted(a for solutions in rows.values() for a in solutions)
    assert mapped == ASSIGNMENTS, "every assignment, once, next to its lecture"
    assert rows["04_self_attention"] == ["self_attention"]


def test_internal_links_resolve(site):
    broken = []
    for page_path in site.rglob("*.html"):
        page = Page(page_path)
        for href in page.links + page.images:
            target = local_target(page_path, href)
            if target is not None and not target.exists():
                broken.append(f"{page_path.relative_to(site)} -> {href}")
    assert not broken, "\n".join(broken[:20])


def worked_answers(nb) -> int:
    return sum("worked-answer" in cell.metadata.get("tags", []) for cell in nb.cells)


CELL = re.compile(r'<div class="cell ([^"]*)">\s*(<[^>]*>)')


@pytest.mark.parametrize("lecture", LECTURES, ids=[p.stem for p in LECTURES])
def test_worked_answers_are_behind_a_toggle(site, lecture):
    """Each worked answer is one cell whose content sits in a closed <details> (myst-nb's
    rendering of the `hide-cell` tag): the reader sees the question and a "Show" toggle."""
    html = (site / "lectures" / f"{lecture.stem}.html").read_text()
    cells = [(m.group(1).split(), m.group(2)) for m in CELL.finditer(html)]
    answers = [(classes, first) for classes, first in cells if "tag_worked-answer" in classes]
    expected = worked_answers(nbformat.read(EXECUTED / lecture.name, as_version=4))
    assert len(answers) == expected, (f"{lecture.name} has {expected} worked-answer cells; "
                                      f"its page shows {len(answers)}")
    for classes, first in answers:
        assert "tag_hide-cell" in classes, f"a worked answer not hidden: {classes}"
        assert first.startswith("<details") and " open" not in first, (
            f"a worked answer does not start behind a closed toggle: {first}")


def test_the_lectures_have_worked_answers(site):
    """The check above means something only once the lectures carry worked answers."""
    counts = {p.stem: worked_answers(nbformat.read(EXECUTED / p.name, as_version=4))
              for p in LECTURES}
    assert sum(counts.values()) > 0, f"no worked answers on the site yet: {counts}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_worked_solutions_hide_every_answer(site, assignment):
    """Each solution cell of the source assignment is on its page behind a toggle: code in a
    closed <details> labelled as a worked answer, a written answer in a collapsed admonition."""
    from book import build

    html = (site / "solutions" / f"{assignment}.html").read_text()
    source = nbformat.read(REPO / "assignments" / assignment / f"{assignment}.ipynb", as_version=4)
    solutions = [c for c in source.cells if c.metadata.get("nbgrader", {}).get("solution")]
    code = [(m.group(1).split(), m.group(2)) for m in CELL.finditer(html)
            if "tag_worked-answer" in m.group(1).split()]
    written = re.findall(r'<div class="[^"]*\bworked-answer\b[^"]*admonition', html)
    assert len(code) == sum(c.cell_type == "code" for c in solutions)
    assert len(written) == sum(c.cell_type == "markdown" for c in solutions)
    for _, first in code:
        assert first.startswith("<details") and " open" not in first
    assert html.count(build.SHOW_CODE) >= len(code)
